"""The scheduling framework's vocabulary: Status codes, per-node results, the cycle context.

Mirrors kube-scheduler's `framework.Status`: a code (Success / Unschedulable /
UnschedulableAndUnresolvable / Skip), the reasons a user sees, and the plugin that said so.
Filters here answer for many nodes at once, so a plugin returns `NodeStatuses`: a code and a
reason-set id per node, plus the small table of distinct reason sets. That keeps 5,000 nodes x
1,000 pods in numpy arrays instead of millions of Python objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Protocol

import numpy as np

from kubegpu.model.kinds import Pod
from kubegpu.scheduling.versions import KubeVersion


class Code(IntEnum):
    """upstream framework.Code, restricted to what filters return."""

    SUCCESS = 0
    UNSCHEDULABLE = 1  # preemption may help
    UNRESOLVABLE = 2   # UnschedulableAndUnresolvable: preemption skips the node
    SKIP = 3           # PreFilter only: the plugin has nothing to check for this pod

    @property
    def upstream(self) -> str:
        return ("Success", "Unschedulable", "UnschedulableAndUnresolvable", "Skip")[self]


@dataclass(frozen=True)
class Status:
    """One plugin's verdict: a code, the reasons (as upstream words them) and the plugin."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str | None = None

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNRESOLVABLE)

    @property
    def message(self) -> str:
        """upstream Status.Message(): reasons joined with ', '."""
        return ", ".join(self.reasons)


SUCCESS = Status()
_CODES = tuple(Code)


def small_unique(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, return_inverse=True) for small non-negative int keys, without a sort
    (per-node verdict keys take a handful of values; sorting 5,000 of them per pod adds up)."""
    keys = np.asarray(keys, dtype=np.int64).reshape(-1)
    if not len(keys) or keys.min() < 0 or keys.max() >= 1 << 20:
        uniq, inverse = np.unique(keys, return_inverse=True)
        return uniq, np.asarray(inverse).reshape(-1)
    uniq = np.flatnonzero(np.bincount(keys))
    lut = np.zeros(int(uniq[-1]) + 1, dtype=np.int64)
    lut[uniq] = np.arange(len(uniq))
    return uniq, lut[keys]


@dataclass(frozen=True)
class PreFilterResult:
    """A PreFilter that narrows the nodes to look at (NodeAffinity with matchFields metadata.name)."""

    node_names: frozenset[str]


@dataclass
class NodeStatuses:
    """One plugin's verdict on a set of nodes: `code[i]` and `rid[i]` index into `table`."""

    code: np.ndarray            # int8, Code per node
    rid: np.ndarray             # int32, index into table (meaningless where code == SUCCESS)
    table: list[tuple[str, ...]] = field(default_factory=list)

    @classmethod
    def success(cls, k: int) -> "NodeStatuses":
        return cls(np.zeros(k, dtype=np.int8), np.zeros(k, dtype=np.int32), [])

    @classmethod
    def where(cls, failed: np.ndarray, code: Code, reasons: tuple[str, ...]) -> "NodeStatuses":
        """Nodes in the `failed` mask get one status; the rest pass."""
        failed = np.asarray(failed, dtype=bool)
        return cls(np.where(failed, np.int8(code), np.int8(0)).astype(np.int8),
                   np.zeros(len(failed), dtype=np.int32), [reasons])

    @classmethod
    def from_choice(cls, choice: np.ndarray, statuses: list[tuple[Code, tuple[str, ...]]]) -> "NodeStatuses":
        """Per node an index into `statuses`, 1-based (0 = pass): vectorised, no loop over nodes."""
        choice = np.asarray(choice, dtype=np.int32)
        codes = np.asarray([0, *[int(c) for c, _ in statuses]], dtype=np.int8)
        return cls(codes[choice], np.maximum(choice - 1, 0).astype(np.int32), [r for _, r in statuses])

    def status(self, i: int, plugin: str) -> Status:
        c = _CODES[int(self.code[i])]
        if c == Code.SUCCESS:
            return Status(plugin=plugin)
        return Status(c, self.table[int(self.rid[i])], plugin)


@dataclass
class PodInfo:
    """A pod's scheduling-relevant facts, computed once per pod (upstream framework.PodInfo)."""

    pod: Pod
    key: str
    requests: dict[str, int]
    vector: np.ndarray             # requests over the snapshot's resource columns
    extra: dict[str, int]          # requested resources no node offers (always insufficient)
    priority: int
    host_ports: list[tuple[str, str, int]] = field(default_factory=list)


class NodeView(Protocol):
    """What a filter reads of the nodes (upstream NodeInfo, for every node at once): summed requests
    and pod counts per node, pods hidden (`excluded`, a mask over pod slots) or added (`extra`, not
    yet bound). `scheduling.snapshot.NodeView` is the implementation."""

    snapshot: Any                  # the SchedulingSnapshot the view reads (labels, taints, pod slots)
    requested: np.ndarray          # int64[n, R]
    pod_count: np.ndarray          # int64[n]
    excluded: np.ndarray | None
    extra: dict[int, list[PodInfo]]

    def without(self, excluded: np.ndarray) -> "NodeView": ...


class FilterPlugin:
    """A PreFilter + Filter plugin of the default profile: every extension point, with its default.

    `node_local` False: a node's verdict reads pods of other nodes (a topology domain), so
    preemption's per-node dry run calls `filter_removed` instead of `filter` on a view without the
    removed pods. `evaluated` False: a placeholder the reports list as not evaluated.
    """

    name: str = ""
    node_local: bool = True
    evaluated: bool = True

    def pre_filter(self, ctx: "CycleContext") -> Status | PreFilterResult | None:
        """None = success; Status(SKIP) = nothing to check; a rejection stops the cycle."""
        return None

    def filter(self, ctx: "CycleContext", view: NodeView, idx: np.ndarray) -> NodeStatuses:
        """Verdicts for the nodes `idx` (indices into the snapshot's node list)."""
        raise NotImplementedError

    def filter_removed(self, ctx: "CycleContext", view: NodeView, removed: np.ndarray,
                       idx: np.ndarray) -> NodeStatuses:
        """For node i, the verdict once the pods `removed` marks on node i alone are gone (node_local False)."""
        raise NotImplementedError(f"{self.name} is node-local: use filter on a view without the pods")


@dataclass
class CycleContext:
    """Everything one scheduling attempt of one pod reads: upstream's CycleState, made explicit."""

    pod: Pod
    info: PodInfo
    snapshot: Any                  # the SchedulingSnapshot (the framework does not know its concrete type)
    version: KubeVersion
    data: dict[str, Any] = field(default_factory=dict)  # per-plugin PreFilter state
