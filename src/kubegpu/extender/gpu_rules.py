"""The GPU rules kube-scheduler cannot see, as per-node verdicts in kubegpu's words.

kube-scheduler counts `nvidia.com/gpu` as a number. It cannot see which GPU model a node has
against the model a pod pins (GFD `nvidia.com/gpu.product`), that a time-sliced node's units are
shares of devices and not whole GPUs, or that a fractional / MIG / time-sliced request needs
room on *one device* (milli-GPU per device). These verdicts are read on the extender's placement
state, which also counts the bindings it assumed since the last build. Vectorised: one pass of
numpy per rule over the requested nodes; the messages come from a small table.

Order (the first failing rule names a node): model pin, time-sliced multi-unit request, too few
devices, no room on the devices now, CPU/memory/pod slots gone to assumed bindings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kubegpu.extender.podfacts import PodFacts
from kubegpu.model.gpu import GPU, NodeGpu
from kubegpu.scheduling.fit import devices_with_room, fits_amounts
from kubegpu.scheduling.framework import Code
from kubegpu.placement.state import PlacementState
from kubegpu.model.text import counted

PREFIX = "kubegpu: "
SHARED_SCHEMES = ("time-slicing", "mps")


def node_groups(node_gpus: list[NodeGpu]) -> tuple[np.ndarray, list[NodeGpu]]:
    """(group id per node, one NodeGpu per group): nodes on which a pod's GPU demand reads the same."""
    ids: dict[tuple, int] = {}
    reps: list[NodeGpu] = []
    out = np.zeros(len(node_gpus), dtype=np.int32)
    for i, g in enumerate(node_gpus):
        key = (g.replicas, g.memory_mib, g.sharing, g.resource)
        j = ids.get(key)
        if j is None:
            j = ids[key] = len(reps)
            reps.append(g)
        out[i] = j
    return out, reps


@dataclass
class Verdicts:
    """Per requested node: a Code (0 = pass) and an index into `messages`."""

    code: np.ndarray
    rid: np.ndarray
    messages: list[str] = field(default_factory=list)
    _ids: dict[tuple[int, str], int] = field(default_factory=dict)

    @classmethod
    def passing(cls, k: int) -> "Verdicts":
        return cls(np.zeros(k, dtype=np.int8), np.zeros(k, dtype=np.int32))

    def fail(self, mask: np.ndarray, code: Code, message: str) -> None:
        """Nodes in `mask` that passed so far fail with this message."""
        mask = mask & (self.code == 0)
        if not mask.any():
            return
        key = (int(code), message)
        j = self._ids.get(key)
        if j is None:
            j = self._ids[key] = len(self.messages)
            self.messages.append(message)
        self.code[mask] = int(code)
        self.rid[mask] = j

    def fail_by(self, mask: np.ndarray, keys: np.ndarray, code: Code, word) -> None:
        """Like `fail`, with a message per distinct key (`word(key)`)."""
        for key in np.unique(keys[mask & (self.code == 0)]).tolist():
            self.fail(mask & (keys == key), code, word(key))

    def overwrite(self, rows: np.ndarray, other: "Verdicts") -> None:
        """Replace the verdicts of `rows` with `other`'s (one per row), merging the message tables."""
        ids = np.zeros(max(len(other.messages), 1), dtype=np.int32)
        for (code, message), j in other._ids.items():
            k = self._ids.get((code, message))
            if k is None:
                k = self._ids[(code, message)] = len(self.messages)
                self.messages.append(message)
            ids[j] = k
        self.code[rows] = other.code
        self.rid[rows] = np.where(other.code != 0, ids[other.rid], 0)

    def take(self, idx: np.ndarray) -> "Verdicts":
        """The verdicts of the nodes `idx`, sharing the message table."""
        return Verdicts(self.code[idx], self.rid[idx], self.messages, self._ids)


class GpuVerdictCache:
    """The GPU rules for one pod shape on every node, refreshed only where the live state changed.

    A node's verdict depends only on that node's row of the placement state (and the pod), so
    like FGD's score cache it is kept per node with the node's `version` it was computed at;
    an assumed binding or an expiry re-judges just that node.
    """

    def __init__(self, n: int) -> None:
        self.verdicts = Verdicts.passing(n)
        self.seen = np.full(n, -1, dtype=np.int64)

    def get(self, facts: PodFacts, live: PlacementState, base: PlacementState, groups: np.ndarray,
            reps: list[NodeGpu], idx: np.ndarray, *, assume_ttl: float) -> Verdicts:
        stale = np.flatnonzero(self.seen != live.version)
        if stale.size:
            fresh = gpu_verdicts(facts, live, base, groups, reps, stale, assume_ttl=assume_ttl)
            self.verdicts.overwrite(stale, fresh)
            self.seen[stale] = live.version[stale]
        return self.verdicts.take(idx)


def demand_columns(facts: PodFacts, groups: np.ndarray, reps: list[NodeGpu], idx: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(devices wanted, milli-GPU per device) per requested node, read on each node's kind."""
    per = [facts.demand(g) for g in reps]
    num = np.asarray([d.num_gpu for d in per], dtype=np.int64)[groups[idx]]
    milli = np.asarray([d.gpu_milli for d in per], dtype=np.int64)[groups[idx]]
    return num, milli


def gpu_verdicts(facts: PodFacts, live: PlacementState, base: PlacementState, groups: np.ndarray,
                 reps: list[NodeGpu], idx: np.ndarray, *, assume_ttl: float) -> Verdicts:
    """The GPU rules on the nodes `idx` (indices into the model's node order)."""
    out = Verdicts.passing(len(idx))
    if not len(idx):
        return out
    num, milli = demand_columns(facts, groups, reps, idx)
    wants = num > 0
    if wants.any():
        models = facts.demand(None).models
        if models:
            wrong = wants & ~live.model_mask(models)[idx]
            names = [*live.gpu_models, "no GPU model"]
            pinned = ", ".join(sorted(models))
            out.fail_by(wrong, live.gpu_model[idx], Code.UNRESOLVABLE,
                        lambda m: f"{PREFIX}GPU model {names[m]} is not one the pod pins ({pinned})")
        if facts.requests.get(GPU, 0) > 1:
            g = groups[idx]
            shared = np.asarray([r.sharing in SHARED_SCHEMES and r.resource == GPU for r in reps], dtype=bool)[g]
            units = facts.requests[GPU]
            out.fail_by(wants & shared, g, Code.UNRESOLVABLE,
                        lambda j: (f"{PREFIX}GPUs here are shared by {reps[j].sharing} ({reps[j].replicas} replicas "
                                   f"per GPU): {units} {GPU} are {units} shares, not {units} whole GPUs"))
        count = live.gpu_count[idx].astype(np.int64)
        out.fail_by(wants & (count < num), count * 100_000 + num, Code.UNRESOLVABLE,
                    lambda k: f"{PREFIX}{counted(k // 100_000, 'GPU device')} on the node, the pod needs {k % 100_000}")
        room = np.zeros(len(idx), dtype=np.int64)
        for m in np.unique(milli[wants]).tolist():
            sel = wants & (milli == m)
            room[sel] = devices_with_room(live.dev_free[idx[sel]], m)
        short = wants & (room < num)
        keys = np.where(short, num * 1_000_000 + milli * 1000 + np.minimum(room, 999), -1)
        out.fail_by(short, keys, Code.UNSCHEDULABLE, lambda k: _room_message(k // 1_000_000, k // 1000 % 1000 or 1000,
                                                                             k % 1000))
    changed = live.version[idx] != base.version[idx]
    if changed.any():
        sub = idx[changed]
        task = facts.task(None)
        ok = fits_amounts((live.cpu_free[sub], live.mem_free[sub]), (task.cpu_milli, task.mem_bytes))
        ok &= live.pods_free[sub] >= 1
        mask = np.zeros(len(idx), dtype=bool)
        mask[np.flatnonzero(changed)[~ok]] = True
        out.fail(mask, Code.UNSCHEDULABLE,
                 f"{PREFIX}no CPU, memory or pod slot left once the pods assumed here in the last "
                 f"{assume_ttl:g}s are counted")
    return out


def _room_message(num: int, milli: int, room: int) -> str:
    if milli >= 1000:
        return f"{PREFIX}{counted(num, 'free GPU')} needed, {room} free on the node"
    each = " each" if num > 1 else ""
    return (f"{PREFIX}{counted(num, 'GPU')} with {milli}m free{each} needed, "
            f"{counted(room, 'device')} {'has' if room == 1 else 'have'} that much")
