"""Simulation engines: the FGD inflation experiment on Alibaba openb traces (`inflation`), trace loading (`trace`).

Submodules are imported explicitly (`kubegpu.simulate.inflation`), so that loading a trace does
not pull in the placement policies.
"""
