"""What a round may spend: moves, concurrent moves per node, GPU-hours of work lost, time windows.

Limits (the issue's; Koordinator's migration controller defaults to at most 2 migrating pods per
node, live-scheduling-facts.md section 15):
  - at most `max_moves` pod moves per round;
  - at most `per_node` moves at once on one node: reservations held on a destination, and pods
    of one step leaving a source (the executor runs one step at a time);
  - at most `max_gpu_hours_round` GPU-hours lost per round and `max_gpu_hours_day` per UTC day
    (priced as `defrag` prices them, checkpoint annotations included);
  - `cooldown` seconds between rounds that moved, and nothing inside a `quiet_hours` window.
The spending so far comes from the ledger (ledger.py), so budgets hold across `--once` runs and
across leaders that share the journal directory.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta

from kubegpu.defrag.plan import Plan
from kubegpu.errors import UsageError
from kubegpu.model.text import counted

PER_NODE_DEFAULT = 2

_WINDOW = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)-([01]?\d|2[0-3]):([0-5]\d)$")


@dataclass(frozen=True)
class Window:
    """A daily UTC window; `end` before `start` wraps past midnight (22:00-06:00)."""

    start: time
    end: time

    def contains(self, now: datetime) -> bool:
        t = now.time().replace(tzinfo=None)
        if self.start <= self.end:
            return self.start <= t < self.end
        return t >= self.start or t < self.end

    def describe(self) -> str:
        return f"{self.start:%H:%M}-{self.end:%H:%M} UTC"


def parse_quiet_hours(text: str | None) -> list[Window]:
    """`22:00-06:00` or several, comma-separated (UTC); a malformed window is a usage error."""
    out: list[Window] = []
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        m = _WINDOW.match(part)
        if m is None:
            raise UsageError(f"--quiet-hours {part!r} is not a window like 22:00-06:00 (UTC)")
        a, b, c, d = (int(x) for x in m.groups())
        if (a, b) == (c, d):
            raise UsageError(f"--quiet-hours {part!r} is empty: start and end are the same time")
        out.append(Window(time(a, b), time(c, d)))
    return out


@dataclass(frozen=True)
class Budget:
    max_moves: int = 6
    per_node: int = PER_NODE_DEFAULT
    max_gpu_hours_round: float | None = None
    max_gpu_hours_day: float | None = None
    cooldown_s: float = 0.0
    quiet_hours: tuple[Window, ...] = ()


@dataclass
class Spent:
    """What earlier rounds spent (from the ledger)."""

    gpu_hours_today: float = 0.0
    last_round_at: datetime | None = None     # the last round that evicted something


@dataclass
class RoundAllowance:
    """What is left for this round while plans are admitted one by one."""

    budget: Budget
    spent: Spent
    moves: int = 0
    gpu_hours: float = 0.0
    skipped: list[str] = field(default_factory=list)

    def admit(self, plan: Plan) -> str | None:
        """None when `plan` fits what is left (and is counted), else why not."""
        b = self.budget
        n = len(plan.moves)
        if self.moves + n > b.max_moves:
            return f"{counted(n, 'move')} would pass --max-moves {b.max_moves} ({self.moves} already in this round)"
        crowded = node_crowding(plan, b.per_node)
        if crowded:
            return crowded
        cost = plan.total_cost_gpu_hours
        if b.max_gpu_hours_round is not None and self.gpu_hours + cost > b.max_gpu_hours_round + 1e-9:
            return (f"it would lose {cost:.2f} GPU-hours, over --max-gpu-hours-lost {b.max_gpu_hours_round:g} per "
                    f"round ({self.gpu_hours:.2f} already in this round)")
        if b.max_gpu_hours_day is not None and self.spent.gpu_hours_today + self.gpu_hours + cost > \
                b.max_gpu_hours_day + 1e-9:
            return (f"it would lose {cost:.2f} GPU-hours, over --max-gpu-hours-lost-per-day {b.max_gpu_hours_day:g} "
                    f"({self.spent.gpu_hours_today + self.gpu_hours:.2f} already today)")
        self.moves += n
        self.gpu_hours = round(self.gpu_hours + cost, 4)
        return None


def node_crowding(plan: Plan, per_node: int) -> str | None:
    """Why `plan` would move more than `per_node` pods at once on one node (None: it does not)."""
    held = Counter(m.to for m in plan.moves)              # every reservation is held until its step is done
    for node, n in sorted(held.items()):
        if n > per_node:
            return f"{n} reservations on {node} at once, over {per_node} concurrent moves per node"
    for step in plan.steps:
        leaving = Counter(m.from_ for m in step)
        for node, n in sorted(leaving.items()):
            if n + held.get(node, 0) > per_node:
                return f"step {step[0].step} moves {counted(n, 'pod')} off {node} at once, over {per_node} per node"
    return None


def round_blocked(budget: Budget, spent: Spent, now: datetime) -> str | None:
    """Why no round may run now (quiet hours, cooldown), or None."""
    for w in budget.quiet_hours:
        if w.contains(now):
            return f"quiet hours {w.describe()}"
    if budget.cooldown_s and spent.last_round_at is not None:
        ready = spent.last_round_at + timedelta(seconds=budget.cooldown_s)
        if now < ready:
            left = (ready - now).total_seconds()
            return f"cooldown: the last round moved pods {budget.cooldown_s - left:.0f} s ago (--cooldown " \
                   f"{budget.cooldown_s:g} s)"
    return None
