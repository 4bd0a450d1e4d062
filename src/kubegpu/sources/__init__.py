"""Where clusters come from: snapshots (files), the embedded demo, a live API server, traces.

Every source yields `Documents` (raw v1 objects plus what is known about the cluster), and
`load_cluster` turns them into the one ClusterState every engine reads.
"""

from kubegpu.sources.documents import Documents, load_cluster

__all__ = ["Documents", "load_cluster"]
