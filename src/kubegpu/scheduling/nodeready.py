"""Which nodes take new pods at all: the one rule frag, audit and the placement state share.

upstream: NodeUnschedulable rejects a cordoned node (spec.unschedulable); a node whose Ready
condition is False or Unknown carries node.kubernetes.io/not-ready or /unreachable NoSchedule
taints (the node lifecycle controller's TaintNodesByCondition), which TaintToleration rejects
for ordinary pods. A dump may hold the condition without the taint, so the condition counts
too. A node that reports no conditions at all (synthetic or hand-written) is taken as Ready.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubegpu.model.kinds import Node


def node_takes_new_pods(node: Node) -> bool:
    if node.spec.unschedulable:
        return False
    return node.is_ready or not any(c.type == "Ready" for c in node.status.conditions)


def nodes_taking_new_pods(nodes: Sequence[Node]) -> np.ndarray:
    """bool[n]: `node_takes_new_pods` for every node, in order."""
    return np.fromiter((node_takes_new_pods(n) for n in nodes), dtype=bool, count=len(nodes))
