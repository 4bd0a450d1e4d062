"""Simulation engines: the FGD inflation experiment (`inflation`, `trace`) and the dynamic event
simulation of `kubegpu simulate run/sweep` (`engine`, `scenario`, `autoscaler`, `karpenter`, `billing`,
`results`, `sweep`; `reference` is the plain-Python oracle the tests compare the engine with).

Submodules are imported explicitly (`kubegpu.simulate.inflation`), so that loading a trace does
not pull in the placement policies.
"""
