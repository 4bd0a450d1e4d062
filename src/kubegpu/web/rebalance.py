"""`kubegpu serve --rebalance-journal DIR`: what the rebalancer's journal directory says, for /metrics
and the overview.

Read-only, with the rebalancer's own readers: the budget ledger (`rebalance.ledger.Ledger`, one line
per round) gives moves by outcome, GPU-hours lost, rounds by status, budget skips and the last
round's stranded GPUs; the round journals (`defrag.journal.Journal`) of plans still in progress
give the placeholders held. Only regular files are read, each bounded in size, the newest
MAX_JOURNALS journals at most. Everything is read again only when a file's size or modification time
changed (a scrape costs a directory listing and stats); callers run `refresh` in a worker thread.
A damaged file is kept as an error message, never raised to the request.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

from kubegpu.defrag.journal import Journal
from kubegpu.errors import InputError
from kubegpu.rebalance.ledger import LEDGER_NAME, Ledger
from kubegpu.rebalance.ledger import MAX_BYTES as LEDGER_MAX_BYTES
from kubegpu.rebalance.metrics import OUTCOMES

MAX_JOURNALS = 256            # the newest round journals read (names start with the run's UTC time)
MAX_JOURNAL_BYTES = 16 << 20


@dataclass
class RebalanceSummary:
    """The journal directory as the rebalancer's metrics count it (totals over the whole ledger)."""

    rounds: dict[str, int] = field(default_factory=dict)
    moves: dict[str, int] = field(default_factory=lambda: {o: 0 for o in OUTCOMES})
    gpu_hours_lost: float = 0.0
    skipped_by_budget: dict[str, int] = field(default_factory=dict)
    stranded_before: float | None = None
    stranded_after: float | None = None
    reservations_held: int = 0
    last_round_at: str | None = None
    last_status: str | None = None
    errors: list[str] = field(default_factory=list)    # damaged files, one line each

    @property
    def total_rounds(self) -> int:
        return sum(self.rounds.values())


def _add(counts: dict[str, int], key: str, n: int) -> None:
    counts[key] = counts.get(key, 0) + n


def summarise_ledger(records: list[dict], out: RebalanceSummary) -> None:
    """Fold the ledger's records (oldest first) into `out`."""
    for rec in records:
        _add(out.rounds, str(rec.get("status", "unknown")), 1)
        out.gpu_hours_lost = round(out.gpu_hours_lost + float(rec["gpu_hours"]), 6)
        for name, key in (("outcomes", out.moves), ("skipped", out.skipped_by_budget)):
            counts = rec.get(name)
            if isinstance(counts, dict):
                for k, n in counts.items():
                    if isinstance(n, int) and n >= 0:
                        _add(key, str(k), n)
        stranded = rec.get("stranded")
        if isinstance(stranded, dict) and stranded:
            out.stranded_before = _number(stranded.get("before"))
            out.stranded_after = _number(stranded.get("after"))
        out.last_round_at, out.last_status = rec["at"], str(rec.get("status", "unknown"))


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def held_in(records: list[dict]) -> int:
    """Placeholders a plan's journal has requested and not released, while the plan is in progress
    (no `finished` record since the last start or resume: its process is running or died)."""
    held: set[str] = set()
    finished = False
    for rec in records:
        event = rec["event"]
        if event == "reserve-request":
            held.add(rec["name"])
        elif event in ("released", "reserve-failed"):
            held.discard(rec["name"])
        elif event == "resumed":
            finished = False
        elif event == "finished":
            finished = True
    return 0 if finished else len(held)


def _regular(path: Path, max_bytes: int) -> tuple[int, int] | str:
    """(size, mtime) of a regular file within `max_bytes`, else why it is not read."""
    try:
        st = os.stat(path)
    except OSError as err:
        return f"{path}: cannot read: {err.strerror or err}"
    if not stat.S_ISREG(st.st_mode):
        return f"{path}: not a regular file"
    if st.st_size > max_bytes:
        return f"{path}: {st.st_size} bytes, over the {max_bytes}-byte bound"
    return st.st_size, st.st_mtime_ns


class RebalanceJournal:
    """The directory, summarised once per change of any file in it."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.lock = threading.Lock()
        self._stamp: tuple | None = None
        self._held: dict[str, tuple[tuple, int | str]] = {}    # journal name -> (stamp, held or error)
        self.summary = RebalanceSummary()
        self.version = 0                                         # bumps when the summary changes

    def refresh(self) -> RebalanceSummary:
        """Re-read what changed since the last call (blocking: run it off the event loop)."""
        with self.lock:
            ledger = self.directory / LEDGER_NAME
            try:
                names = sorted(e.name for e in os.scandir(self.directory)
                               if e.name.startswith("rebalance-") and e.name.endswith(".jsonl"))[-MAX_JOURNALS:]
            except OSError as err:
                names, listing = [], f"{self.directory}: cannot list: {err.strerror or err}"
            else:
                listing = ""
            ledger_stamp = _regular(ledger, LEDGER_MAX_BYTES) if ledger.exists() else None
            stamps = tuple((n, _regular(self.directory / n, MAX_JOURNAL_BYTES)) for n in names)
            stamp = (listing, ledger_stamp, stamps)
            if stamp != self._stamp:
                self.summary = self._read(listing, ledger, ledger_stamp, stamps)
                self._stamp = stamp
                self.version += 1
            return self.summary

    def _read(self, listing: str, ledger: Path, ledger_stamp, stamps) -> RebalanceSummary:
        out = RebalanceSummary()
        if listing:
            out.errors.append(listing)
        if isinstance(ledger_stamp, str):
            out.errors.append(ledger_stamp)
        elif ledger_stamp is not None:
            try:
                summarise_ledger(Ledger(self.directory).records(), out)
            except InputError as err:
                out.errors.append(str(err))
        held: dict[str, tuple[tuple, int | str]] = {}
        for name, st in stamps:
            if isinstance(st, str):
                held[name] = (st, st)
            elif name in self._held and self._held[name][0] == st:
                held[name] = self._held[name]
            else:
                try:
                    held[name] = (st, held_in(Journal(self.directory / name).read()))
                except InputError as err:
                    held[name] = (st, str(err))
        self._held = held
        for _, value in held.values():
            if isinstance(value, str):
                out.errors.append(value)
            else:
                out.reservations_held += value
        return out
