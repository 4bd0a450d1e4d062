"""The cluster model: quantities, typed v1 objects, ClusterState and the columnar NodeTable.

The innermost layer: imports nothing else of kubegpu's but `kubegpu.errors` (InputError for bad
quantities and objects)."""

from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import GpuDemand, NodeGpu
from kubegpu.model.kinds import Node, Pod
from kubegpu.model.nodetable import NodeTable

__all__ = ["ClusterState", "GpuDemand", "Node", "NodeGpu", "NodeTable", "Pod"]
