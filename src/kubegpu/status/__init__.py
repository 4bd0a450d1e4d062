"""Status: what every node has and what is allocated on it, in physical GPUs."""

from kubegpu.status.report import NodeStatusRow, StatusReport, cluster_status

__all__ = ["NodeStatusRow", "StatusReport", "cluster_status"]
