"""The cluster model: quantities, typed v1 objects, ClusterState and the columnar NodeTable.

Imports nothing else of kubegpu's (the innermost layer)."""

from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import GpuDemand, NodeGpu
from kubegpu.model.kinds import Node, Pod
from kubegpu.model.nodetable import NodeTable

__all__ = ["ClusterState", "GpuDemand", "Node", "NodeGpu", "NodeTable", "Pod"]
