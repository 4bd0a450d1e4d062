"""The decision log: one schema-versioned record per extender decision, as NDJSON.

Every filter, prioritize and preempt answer is written as one JSON line (`--ledger PATH`,
rotated to PATH.1 when it passes `max_bytes`) and kept in an in-memory ring either way. A
record says who asked (pod, gang, request), what the extender knew (generation, snapshot age),
what it answered (the filter histogram in kube-scheduler's words, the top scores with the
policy's own score and the stranded GPUs after, the chosen node) and how long it took.
Schema: docs/schemas/decision.schema.json.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from pathlib import Path

import msgspec

from kubegpu.errors import InputError
from kubegpu.guards.bounded import read_bounded

SCHEMA = "kubegpu.io/decision/v1"
MODES = ("extender-filter", "extender-prioritize", "extender-preempt", "shadow")
DEFAULT_RING = 10_000
DEFAULT_MAX_BYTES = 64 << 20


class PodRef(msgspec.Struct, kw_only=True):
    namespace: str
    name: str
    uid: str = ""
    owner: str | None = None           # "Kind/name" of the controller
    priority: int = 0
    scheduler_name: str = ""


class GangRef(msgspec.Struct, kw_only=True):
    name: str                          # "ns/name"
    min_member: int
    bound: int
    placeable: int                     # pending members the core could place together now


class GpuRequest(msgspec.Struct, kw_only=True):
    cpu_milli: int = 0
    memory_bytes: int = 0
    num_gpu: int = 0                   # devices (physical, as read on a whole-GPU node)
    gpu_milli: int = 0                 # per device
    gpu_models: list[str] | None = None
    resources: dict[str, int] = {}     # every requested resource in scheduler units


class FilterSummary(msgspec.Struct, kw_only=True):
    nodes_in: int
    passed: int
    unknown: int = 0
    message: str = ""                  # "0/N nodes are available: ..." over the rejected nodes
    reasons: dict[str, int] = {}


class Score(msgspec.Struct, kw_only=True):
    node: str
    score: int                         # 0..10 as sent to kube-scheduler
    policy_score: float
    stranded_gpus_after: float | None = None


class PreemptSummary(msgspec.Struct, kw_only=True):
    nodes_in: int
    kept: list[str] = []
    dropped: dict[str, str] = {}


class Timings(msgspec.Struct, kw_only=True):
    total_ms: float
    core_ms: float = 0.0
    gpu_ms: float = 0.0
    score_ms: float = 0.0


class Decision(msgspec.Struct, kw_only=True, omit_defaults=False):
    schema: str = SCHEMA
    id: str
    time: str                          # RFC 3339, UTC
    mode: str
    pod: PodRef
    gang: GangRef | None = None
    request: GpuRequest | None = None
    generation: int = 0
    snapshot_age_s: float | None = None
    policy: str = ""
    filter: FilterSummary | None = None
    scores: list[Score] = []
    preempt: PreemptSummary | None = None
    chosen: str | None = None          # prioritize: the policy's node (scored 10); shadow: the bound node
    policy_choice: str | None = None   # shadow: the node the policy would have chosen
    outcome: str = ""
    error: str = ""
    timings: Timings | None = None


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Decision)


class Ledger:
    """The in-memory ring, and the NDJSON file when a path is given (append, rotate by size)."""

    def __init__(self, path: str | None = None, *, ring: int = DEFAULT_RING, max_bytes: int = DEFAULT_MAX_BYTES,
                 prefix: str = "") -> None:
        self.path = Path(path) if path else None
        self.max_bytes = max_bytes
        self.ring: deque[Decision] = deque(maxlen=ring)
        self.lock = threading.Lock()
        self._seq = itertools.count(1)
        self._prefix = prefix or f"{os.getpid():x}"
        self._file = None
        self.write_errors = 0
        self.listeners: list = []     # callables(Decision) run after each record, e.g. EventPoster.offer
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "ab")
            except OSError as err:
                raise InputError(f"cannot open the decision log: {err.strerror or err}", where=str(path)) from None

    def next_id(self) -> str:
        return f"{self._prefix}-{next(self._seq)}"

    def record(self, decision: Decision) -> None:
        line = _ENCODER.encode(decision) + b"\n"
        with self.lock:
            self.ring.append(decision)
            if self._file is not None:
                try:
                    if self._file.tell() + len(line) > self.max_bytes and self._file.tell() > 0:
                        self._rotate()
                    self._file.write(line)
                    self._file.flush()
                except OSError:
                    self.write_errors += 1      # a full disk must not stop scheduling; counted on /metrics
        for listener in self.listeners:
            listener(decision)

    def _rotate(self) -> None:
        self._file.close()
        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        self._file = open(self.path, "ab")

    def recent(self, pod: str | None = None, limit: int = 100) -> list[Decision]:
        with self.lock:
            items = list(self.ring)
        if pod:
            items = [d for d in items if matches(d, pod)]
        return items[-limit:]

    def close(self) -> None:
        with self.lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def matches(d: Decision, pod: str) -> bool:
    """'ns/name' matches exactly; a bare name matches in any namespace."""
    if "/" in pod:
        return f"{d.pod.namespace}/{d.pod.name}" == pod
    return d.pod.name == pod


def summary(d: Decision) -> str:
    """One line: what the extender answered and why."""
    if d.error:
        return d.error
    if d.filter is not None:
        f = d.filter
        text = f"{f.passed}/{f.nodes_in} nodes passed"
        return f"{text}; {f.message}" if f.message else text
    if d.scores:
        best = d.scores[0]
        stranded = "" if best.stranded_gpus_after is None else f", {best.stranded_gpus_after:g} GPUs stranded after"
        return f"top {best.node} (policy {best.policy_score:g}{stranded})"
    if d.preempt is not None:
        dropped = "; ".join(f"{n}: {why}" for n, why in sorted(d.preempt.dropped.items()))
        return f"kept {len(d.preempt.kept)}/{d.preempt.nodes_in} candidates" + (f"; dropped {dropped}" if dropped else "")
    return ""


class ShadowTotals(msgspec.Struct, kw_only=True):
    """What `mode: shadow` records add up to: the scheduler's choices against the policy's."""

    binds: int = 0
    agreed: int = 0
    scheduler_stranded_gpus: float = 0.0
    policy_stranded_gpus: float = 0.0
    first: str = ""
    last: str = ""


def shadow_totals(records: list[Decision]) -> ShadowTotals:
    """Sum the stranded GPUs after each bind: on the scheduler's node, and on the policy's node instead."""
    out = ShadowTotals()
    for d in records:
        if d.mode != "shadow" or not d.scores:
            continue
        mine = d.scores[0].stranded_gpus_after or 0.0
        theirs = d.scores[1].stranded_gpus_after if len(d.scores) > 1 else mine
        out.binds += 1
        out.agreed += d.outcome == "agreed"
        out.scheduler_stranded_gpus += mine
        out.policy_stranded_gpus += theirs or 0.0
        out.first = out.first or d.time
        out.last = d.time
    out.scheduler_stranded_gpus = round(out.scheduler_stranded_gpus, 3)
    out.policy_stranded_gpus = round(out.policy_stranded_gpus, 3)
    return out


def read_ledger(path: str | Path, *, max_bytes: int = 1 << 30) -> list[Decision]:
    """Every record of a ledger file and its rotated predecessor (PATH.1 first), oldest first.

    A line that is not a decision record is an InputError naming the file and line.
    """
    p = Path(path)
    files = [f for f in (p.with_name(p.name + ".1"), p) if f.exists()]
    if not files:
        raise InputError("no such decision log", where=str(p))
    out: list[Decision] = []
    for f in files:
        data = read_bounded(f, max_bytes=max_bytes)
        for n, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append(_DECODER.decode(line))
            except (msgspec.ValidationError, msgspec.DecodeError) as err:
                raise InputError(f"not a decision record: {err}", where=f"{f}:{n}") from None
    return out
