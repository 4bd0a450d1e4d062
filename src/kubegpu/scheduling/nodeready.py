"""Which nodes take new pods at all: the one rule status, frag, the GPU map, /metrics, audit and
the placement state share.

upstream: NodeUnschedulable rejects a cordoned node (spec.unschedulable); a node whose Ready
condition is False or Unknown carries node.kubernetes.io/not-ready or /unreachable NoSchedule
taints (the node lifecycle controller's TaintNodesByCondition), which TaintToleration rejects
for ordinary pods. A dump may hold the condition without the taint, so the condition counts
too. A node that reports no conditions at all (synthetic or hand-written) is taken as Ready.

`why` and `defrag` run the scheduling core, which (like kube-scheduler) reads only the taints:
for a NotReady node without those taints they say a pod fits, and `why` notes the node in its
per-node detail (`not_ready_untainted`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubegpu.model.kinds import Node
from kubegpu.model.objects import Taint

# upstream pkg/apis/core/v1/helper: TaintNodeNotReady, TaintNodeUnreachable
CONDITION_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
NOT_READY_UNTAINTED_NOTE = ("node reports NotReady (Ready condition) but has no not-ready/unreachable taint: "
                            "kube-scheduler reads only taints, so it may place the pod here; "
                            "status and frag count the node as taking no new pods")


def takes_new_pods(cordoned: Any, not_ready: Any) -> np.ndarray:
    """The rule on columns (or one node's two booleans): neither cordoned nor reporting NotReady."""
    return ~np.asarray(cordoned, dtype=bool) & ~np.asarray(not_ready, dtype=bool)


def node_takes_new_pods(node: Node) -> bool:
    return bool(takes_new_pods(node.spec.unschedulable, node.reports_not_ready))


def nodes_taking_new_pods(nodes: Sequence[Node]) -> np.ndarray:
    """bool[n]: `node_takes_new_pods` for every node, in order."""
    return takes_new_pods([n.spec.unschedulable for n in nodes], [n.reports_not_ready for n in nodes]).reshape(-1)


def table_takes_new_pods(table: Any) -> np.ndarray:
    """bool[n]: the rule over a NodeTable's `cordoned` and `not_ready` columns."""
    return takes_new_pods(table.cordoned, table.not_ready)


def has_condition_taint(taints: Sequence[Taint]) -> bool:
    """A not-ready/unreachable taint with a scheduling effect is among `taints`."""
    return any(t.key in CONDITION_TAINTS and t.effect in ("NoSchedule", "NoExecute") for t in taints)


def not_ready_untainted(node: Node) -> bool:
    """The node reports NotReady but carries no condition taint with a scheduling effect."""
    return node.reports_not_ready and not has_condition_taint(node.spec.taints)


def table_not_ready_untainted(table: Any) -> np.ndarray:
    """bool[n]: `not_ready_untainted` over a NodeTable (`not_ready` column, taints once per distinct set)."""
    sets, group = table.taint_groups
    tainted = np.asarray([has_condition_taint(s) for s in sets], dtype=bool)
    return np.asarray(table.not_ready, dtype=bool) & ~tainted[group]
