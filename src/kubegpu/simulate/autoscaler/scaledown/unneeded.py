"""Per-node unneeded timers (upstream scaledown/unneeded/nodes.go).

A node keeps its `since` while it stays in the unneeded list and loses it the moment it drops
out. It is removable once `!since.Add(threshold).Before(now)` is false, i.e. since + threshold < now.
"""

from __future__ import annotations


class UnneededNodes:
    def __init__(self) -> None:
        self.since: dict[int, float] = {}

    def update(self, slots: list[int], now: float) -> None:
        self.since = {s: self.since.get(s, now) for s in slots}

    def long_enough(self, slot: int, now: float, threshold: float) -> bool:
        since = self.since.get(slot)
        return since is not None and since + threshold < now

    def drop(self, slot: int) -> None:
        self.since.pop(slot, None)
