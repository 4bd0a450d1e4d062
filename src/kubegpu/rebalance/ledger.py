"""The budget ledger: one fsynced JSON line per round, so budgets and cooldown outlive the process.

Kept next to the round journals (`--journal-dir`); a CronJob running `--once`, or a new leader
that shares the directory, reads what earlier rounds spent. Each record:
`{"at": RFC3339 (the round's clock), "run": id, "status": str, "moves": int, "gpu_hours": float}`,
and, for `kubegpu serve --rebalance-journal` (optional: older lines lack them), `outcomes` (move
outcome -> count), `skipped` (budget reason -> plans or rounds held back) and `stranded`
(`before`/`after`: stranded GPUs around the round). With `--stranded-above`, `stranded_above` (the
threshold) and `stranded_above_since` (RFC3339, or null while below it) carry the `--sustained` timer
from one `--once` run (or leader) to the next. The journals hold every change; the ledger only what
budgets, metrics and the timer need.
"""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime, timedelta
from pathlib import Path

from kubegpu.errors import InputError
from kubegpu.model.timeutil import parse_time
from kubegpu.rebalance.budget import Spent
from kubegpu.guards.bounded import read_bounded

LEDGER_NAME = "budget-ledger.jsonl"
MAX_BYTES = 64 << 20      # about 400,000 rounds: years at the default 5-minute interval


class Ledger:
    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / LEDGER_NAME

    def append(self, *, at: datetime, run: str, status: str, moves: int, gpu_hours: float,
               **extra: object) -> None:
        """One round; `extra` adds the optional metric fields (outcomes, skipped, stranded)."""
        rec = {"at": at.isoformat(), "run": run, "status": status, "moves": moves, "gpu_hours": round(gpu_hours, 4)}
        rec.update({k: v for k, v in extra.items() if v is not None and v != {}})
        line = json.dumps(rec, sort_keys=True) + "\n"
        try:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as err:
            raise InputError(f"cannot write the rebalance ledger: {err.strerror or err}", where=str(self.path)) from None

    def records(self) -> list[dict]:
        """Every record, oldest first; a regular file of at most MAX_BYTES (InputError otherwise)."""
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return []
        except OSError as err:
            raise InputError(f"cannot read the rebalance ledger: {err.strerror or err}", where=str(self.path)) from None
        if not stat.S_ISREG(mode):
            raise InputError("the rebalance ledger is not a regular file", where=str(self.path))
        try:
            text = read_bounded(self.path, max_bytes=MAX_BYTES).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("the rebalance ledger is not UTF-8 text", where=str(self.path)) from None
        out = []
        lines = text.split("\n")
        for i, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError:
                if i == len(lines):  # a torn last line (a crash mid-write): ignored
                    continue
                raise InputError(f"line {i} is not JSON", where=str(self.path)) from None
            if not (isinstance(rec, dict) and isinstance(rec.get("at"), str)
                    and isinstance(rec.get("gpu_hours"), (int, float)) and isinstance(rec.get("moves"), int)):
                raise InputError(f"line {i} is not a ledger record (at, moves, gpu_hours)", where=str(self.path))
            out.append(rec)
        return out

    def stranded_since(self, threshold: float) -> datetime | None:
        """Since when the last round that measured against `threshold` saw stranded GPUs above it
        (None: below it, never measured, or measured against another threshold)."""
        for rec in reversed(self.records()):
            if "stranded_above" not in rec:
                continue
            since = rec.get("stranded_above_since")
            if rec["stranded_above"] != threshold or not isinstance(since, str):
                return None
            return parse_time(since)
        return None

    def spent(self, now: datetime) -> Spent:
        """GPU-hours lost since 00:00 UTC of `now`'s day, and when the last round that moved pods ran."""
        day = now.replace(hour=0, minute=0, second=0, microsecond=0)
        spent = Spent()
        for rec in self.records():
            at = parse_time(rec["at"])
            if at is None or at > now + timedelta(seconds=1):
                continue
            if at >= day:
                spent.gpu_hours_today = round(spent.gpu_hours_today + float(rec["gpu_hours"]), 4)
            if rec["moves"] > 0 and (spent.last_round_at is None or at > spent.last_round_at):
                spent.last_round_at = at
        return spent
