"""Model weights on node-local disks: the ModelCache object, the node puller, the plan, the rollout gate.

Layers: `spec` (the object) <- `store`/`fetch`/`pull` (one node's disk) <- `plan`, `rollout` (pure
decisions) <- `kube` (the API edge) <- `agent`, `controller` (loops). The CLI is `kubegpu.cli.models`.
"""
