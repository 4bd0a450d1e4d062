"""The executor's journal: write-ahead intent before every mutation, its outcome after (fsynced).

One JSON object per line. The first record holds the plan, its hash, the cluster it is for
(identity.py) and the eviction policy, so `--resume JOURNAL` needs nothing else. Mutations are
journaled as intent then outcome:

    cordon-request   -> cordoned        (a node we found schedulable; `already-cordoned`: not ours)
    evict-request    -> evicted         (`evict-refused`: a 429, retried)
    uncordon-request -> uncordoned      (`uncordon-failed`: the API refused; run kubectl uncordon)
    step-done        every pod of a step evicted, gone, and its replacement running
    finished         status finished | stopped (resumable) | aborted, with the reason
    resumed          a later run continues (the run's own cluster identity)
    reserve-request  -> reserved        (rebalance: a placeholder pod bound on the move's destination;
                                         `reserve-failed`: it could not be placed, nothing was evicted)
    release-request  -> released        (the placeholder deleted: used, unused past its TTL, or at the end)

An intent without its outcome is a crash between the two: resume reconciles it with the live
cluster. A torn last line (a crash mid-write) is cut off on resume; any other damage is refused.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from kubegpu.defrag.identity import ClusterIdentity
from kubegpu.defrag.plan import Plan, plan_from_builtins, plan_to_builtins
from kubegpu.errors import InputError, UsageError

FORMAT = 2
MAX_DEPTH = 64
# event -> the keys it must carry (with their types); anything else in a journal is refused.
SCHEMA: dict[str, dict[str, type | tuple[type, ...]]] = {
    "plan": {"plan": dict, "plan_hash": str, "cluster": dict, "format": int},
    "resumed": {"cluster": dict},
    "cordon-request": {"node": str},
    "cordoned": {"node": str},
    "cordon-not-applied": {"node": str},
    "already-cordoned": {"node": str},
    "uncordon-request": {"node": str},
    "uncordoned": {"node": str},
    "uncordon-failed": {"node": str},
    "evict-request": {"uid": str, "pod": str},
    "evicted": {"uid": str, "pod": str},
    "evict-refused": {"uid": str, "pod": str},
    "evict-no-answer": {"uid": str, "pod": str},
    "gate-refused": {"pod": str, "reasons": list},
    "step-done": {"step": int, "pods": list},
    "finished": {"status": str, "message": str},
    # rebalance: a placeholder pod holds each destination before its pod is evicted
    "reserve-request": {"name": str, "node": str, "pod": str},
    "reserved": {"name": str, "node": str},
    "reserve-failed": {"name": str, "reason": str},
    "release-request": {"name": str},
    "released": {"name": str},
}
FINAL_STATES = ("finished", "stopped", "aborted")


class JournalWriteError(Exception):
    """The journal cannot be written (disk full, read-only, gone): the run must stop, undo first."""

    def __init__(self, path: Path, err: OSError) -> None:
        super().__init__(f"cannot write the journal {path}: {err.strerror or err}")


def canonical_plan(plan: Plan) -> dict:
    """The plan as it reads back from JSON (a 0 in a float field comes back 0.0): what is hashed and run."""
    return plan_to_builtins(plan_from_builtins(json.loads(json.dumps(plan_to_builtins(plan)))))


def plan_hash(plan: Plan) -> str:
    """SHA-256 of the plan's canonical JSON: the journal's plan is the plan that runs."""
    data = json.dumps(canonical_plan(plan), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()


@dataclass
class JournalState:
    """What a journal says has happened."""

    plan: Plan | None = None
    plan_hash: str = ""
    cluster: ClusterIdentity | None = None
    policy: dict = field(default_factory=dict)
    cordoned: list[str] = field(default_factory=list)           # by us, not yet known to be uncordoned
    cordon_requested: list[str] = field(default_factory=list)   # intent without outcome
    admin_cordoned: set[str] = field(default_factory=set)       # found cordoned: never ours
    requested: dict[str, dict] = field(default_factory=dict)    # pod uid -> evict-request record
    evicted: set[str] = field(default_factory=set)              # pod uids
    steps_done: dict[int, dict] = field(default_factory=dict)   # step -> step-done record
    finished: dict | None = None                                # the last run's final record
    records: int = 0


def _depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a JSON value, stopping at `limit`."""
    stack = [(value, 1)]
    deepest = 0
    while stack:
        item, d = stack.pop()
        deepest = max(deepest, d)
        if d >= limit:
            return d
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((c, d + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def _check(rec: Any, line: int) -> dict:
    if not isinstance(rec, dict):
        raise ValueError(f"line {line} is a JSON {type(rec).__name__}, not a journal record")
    event = rec.get("event")
    if not isinstance(event, str):
        raise ValueError(f"line {line} has no event")
    want = SCHEMA.get(event)
    if want is None:
        raise ValueError(f"line {line}: unknown event {event!r}")
    for key, typ in want.items():
        if not isinstance(rec.get(key), typ) or isinstance(rec.get(key), bool):
            raise ValueError(f"line {line} ({event}): field {key!r} missing or not a {getattr(typ, '__name__', typ)}")
    if event == "finished" and rec["status"] not in FINAL_STATES:
        raise ValueError(f"line {line}: unknown final status {rec['status']!r}")
    return rec


class Journal:
    """An append-only JSON-lines file; `opener` is the seam tests use to make a write fail."""

    def __init__(self, path: str | Path, *, opener: Callable[..., Any] = open) -> None:
        self.path = Path(path)
        self._open = opener

    def exists(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    def record(self, event: str, **fields: Any) -> None:
        """Append one record and fsync it; on failure cut back what was half written, then raise."""
        entry = {"event": event, "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), **fields}
        line = (json.dumps(entry, separators=(",", ":"), sort_keys=True) + "\n").encode()
        try:
            size = self.path.stat().st_size if self.path.exists() else 0
        except OSError as err:
            raise JournalWriteError(self.path, err) from None
        try:
            with self._open(self.path, "ab") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as err:
            self._cut(size)
            raise JournalWriteError(self.path, err) from None

    def _cut(self, size: int) -> None:
        """Best effort: drop a partial record so the file still ends on a whole line."""
        try:
            if self.path.exists() and self.path.stat().st_size > size:
                os.truncate(self.path, size)
        except OSError:
            pass

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the journal exclusively for one run: a second `--resume` of it is refused, not interleaved."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not hang the open
        except OSError as err:
            raise InputError(f"cannot open the journal: {err.strerror or err}", where=str(self.path)) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputError("not a regular file: not a kubegpu defrag journal", where=str(self.path))
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UsageError(f"journal {self.path} is in use by another kubegpu process; wait for it to "
                                 "stop (or stop it) before resuming") from None
            yield
        finally:
            os.close(fd)

    def start(self, plan: Plan, cluster: ClusterIdentity, policy: dict | None = None) -> None:
        self.record("plan", plan=canonical_plan(plan), plan_hash=plan_hash(plan), cluster=cluster.to_builtins(),
                    policy=policy or {}, format=FORMAT)

    # ------------------------------------------------------------------ reading
    def _bytes(self) -> bytes:
        try:
            return self.path.read_bytes()
        except OSError as err:
            raise InputError(f"cannot read the journal: {err.strerror or err}", where=str(self.path)) from None

    def repair(self) -> int:
        """Cut a torn last line (no newline: the process died mid-write) and fsync; bytes removed.

        Only a journal is ever cut: every whole line must be a record (else InputError, nothing
        changed) and the torn tail must be the start of one (a JSON object)."""
        data = self._bytes()
        if not data or data.endswith(b"\n"):
            return 0
        keep = data.rfind(b"\n") + 1
        if not self.read() or not data[keep:].lstrip().startswith(b"{"):
            raise InputError("the last line is not a whole journal record and this does not look like a torn "
                             "journal: not cut", where=str(self.path))
        try:
            fd = os.open(self.path, os.O_WRONLY)
            try:
                os.ftruncate(fd, keep)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as err:
            raise InputError(f"cannot cut the torn last line: {err.strerror or err}", where=str(self.path)) from None
        return len(data) - keep

    def read(self) -> list[dict]:
        """Every whole record; a torn last line is left out (repair() cuts it), anything else refused."""
        data = self._bytes()
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:
            lines.pop()  # torn: no newline after it
        out = []
        for i, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
                if text.count("[") + text.count("{") > MAX_DEPTH and _depth(json.loads(text)) >= MAX_DEPTH:
                    raise ValueError(f"line {i} is nested too deeply")
                out.append(_check(json.loads(text), i))
            except UnicodeDecodeError:
                raise InputError(f"line {i} is not UTF-8 text: not a kubegpu defrag journal",
                                 where=str(self.path)) from None
            except RecursionError:
                raise InputError(f"line {i} is nested too deeply", where=str(self.path)) from None
            except json.JSONDecodeError:
                raise InputError(f"line {i} is not JSON", where=str(self.path)) from None
            except ValueError as err:
                raise InputError(str(err), where=str(self.path)) from None
        return out

    def state(self) -> JournalState:
        st = JournalState()
        for i, rec in enumerate(self.read(), start=1):
            st.records += 1
            event = rec["event"]
            if (event == "plan") != (i == 1):
                raise InputError(f"line {i}: the plan record must come first, once", where=str(self.path))
            if event == "plan":
                self._read_plan(st, rec)
            elif event == "resumed":
                st.finished = None
            elif event == "cordon-request":
                st.cordon_requested.append(rec["node"])
            elif event == "cordoned":
                _discard(st.cordon_requested, rec["node"])
                if rec["node"] not in st.cordoned:
                    st.cordoned.append(rec["node"])
            elif event == "cordon-not-applied":
                _discard(st.cordon_requested, rec["node"])
            elif event == "already-cordoned":
                st.admin_cordoned.add(rec["node"])
            elif event == "uncordoned":
                _discard(st.cordoned, rec["node"])
            elif event == "evict-request":
                st.requested[rec["uid"]] = rec
            elif event == "evicted":
                st.evicted.add(rec["uid"])
            elif event == "step-done":
                st.steps_done[rec["step"]] = rec
            elif event == "finished":
                st.finished = rec
        return st

    def _read_plan(self, st: JournalState, rec: dict) -> None:
        if rec["format"] != FORMAT:
            raise InputError(f"journal format {rec['format']} is not {FORMAT} (another kubegpu version)",
                             where=str(self.path))
        try:
            st.plan = plan_from_builtins(rec["plan"])
            st.cluster = ClusterIdentity.from_builtins(rec["cluster"])
        except (msgspec.ValidationError, TypeError) as err:
            raise InputError(f"line 1: the plan record is not a defrag plan ({err})", where=str(self.path)) from None
        if not isinstance(st.cluster.server, str):
            raise InputError("line 1: the plan record names no cluster server", where=str(self.path))
        if plan_hash(st.plan) != rec["plan_hash"]:
            raise InputError("line 1: the plan does not match its recorded hash (the journal was edited)",
                             where=str(self.path))
        st.plan_hash = rec["plan_hash"]
        st.policy = rec.get("policy") if isinstance(rec.get("policy"), dict) else {}


def _discard(items: list[str], value: str) -> None:
    if value in items:
        items.remove(value)
