"""The executor's journal: every step appended (and fsynced) before and after it happens.

One JSON object per line. The first record holds the plan, so `--resume JOURNAL` needs nothing
else. An eviction is journaled as `evict-request` before the API call and `evicted` after it; a
crash between the two is resolved on resume by looking at the pod (its uid gone or terminating
means the eviction happened), so no eviction is ever sent twice for the same pod.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kubegpu.defrag.plan import Plan, plan_from_builtins, plan_to_builtins
from kubegpu.errors import InputError


@dataclass
class JournalState:
    """What a journal says has happened."""

    plan: Plan | None = None
    cordoned: list[str] = field(default_factory=list)          # by us, not yet uncordoned
    requested: dict[str, dict] = field(default_factory=dict)   # pod uid -> evict-request record
    evicted: set[str] = field(default_factory=set)             # pod uids
    steps_done: dict[int, dict] = field(default_factory=dict)  # step -> step-done record
    finished: dict | None = None
    records: int = 0


class Journal:
    """An append-only JSON-lines file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def exists(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    def record(self, event: str, **fields: Any) -> None:
        entry = {"event": event, "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), **fields}
        line = json.dumps(entry, separators=(",", ":"), sort_keys=True) + "\n"
        try:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as err:
            raise InputError(f"cannot write the journal: {err.strerror or err}", where=str(self.path)) from None

    def start(self, plan: Plan) -> None:
        self.record("plan", plan=plan_to_builtins(plan))

    def read(self) -> list[dict]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as err:
            raise InputError(f"cannot read the journal: {err.strerror or err}", where=str(self.path)) from None
        out = []
        lines = text.splitlines()
        for i, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                if i == len(lines):
                    break  # a torn last line from a crash mid-write: ignore it
                raise InputError(f"line {i} is not JSON", where=str(self.path)) from None
        return out

    def state(self) -> JournalState:
        st = JournalState()
        for rec in self.read():
            st.records += 1
            event = rec.get("event")
            if event == "plan":
                st.plan = plan_from_builtins(rec["plan"])
            elif event == "cordoned":
                if rec["node"] not in st.cordoned:
                    st.cordoned.append(rec["node"])
            elif event == "uncordoned":
                if rec["node"] in st.cordoned:
                    st.cordoned.remove(rec["node"])
            elif event == "evict-request":
                st.requested[rec["uid"]] = rec
            elif event == "evicted":
                st.evicted.add(rec["uid"])
            elif event == "step-done":
                st.steps_done[int(rec["step"])] = rec
            elif event == "finished":
                st.finished = rec
        if st.records and st.plan is None:
            raise InputError("not a kubegpu defrag journal (no plan record)", where=str(self.path))
        return st
