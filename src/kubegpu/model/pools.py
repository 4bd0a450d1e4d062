"""Node pools: the label that groups nodes of one shape, whatever the cloud calls it."""

from __future__ import annotations

from kubegpu.model.kinds import Node

# Most specific first: an explicit pool label, then each cloud's and autoscaler's own.
POOL_LABELS = (
    "pool",
    "node-pool",
    "nodepool",
    "kubegpu.io/pool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "node.kubernetes.io/pool",
    "doks.digitalocean.com/node-pool",
    "node.kubernetes.io/instance-type",
)


def node_pool(node: Node) -> str:
    """The node's pool name, or "" when no known label says."""
    labels = node.metadata.labels
    for key in POOL_LABELS:
        if labels.get(key):
            return labels[key]
    return ""
