"""The event queue: a heap ordered by (time, priority, sequence), so equal times resolve the same way every run.

Priorities at one instant: pods ending free capacity first, then nodes leave and arrive, then new
jobs, then the autoscaler's scan, then metric samples. The sequence number keeps insertion order.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

JOB_END = 0        # a batch job finished or a service replica was deleted (a, b = job id, incarnation)
NODE_DELETE = 1    # a node being removed is gone (a = slot)
NODE_READY = 2     # a node's GPUs became allocatable (a = slot)
ARRIVAL = 3        # a job is submitted (a = job id)
GANG_TIMEOUT = 4   # a gang's scheduling timeout (a = job id, b = incarnation)
AUTOSCALER = 5     # one cluster-autoscaler RunOnce
SAMPLE = 6         # record the timeline
REBALANCE = 7      # one `kubegpu rebalance` round (scenario key `rebalancer`)
NAMES = {JOB_END: "job-end", NODE_DELETE: "node-delete", NODE_READY: "node-ready", ARRIVAL: "arrival",
         GANG_TIMEOUT: "gang-timeout", AUTOSCALER: "autoscaler", SAMPLE: "sample", REBALANCE: "rebalance"}


class EventQueue:
    """Min-heap of (time, kind, seq, a, b); the kind doubles as the priority at equal times."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._seq = itertools.count()

    def push(self, time: float, kind: int, a: int = 0, b: int = 0) -> None:
        heapq.heappush(self._heap, (time, kind, next(self._seq), a, b))

    def pop(self) -> tuple[float, int, int, int, int]:
        return heapq.heappop(self._heap)

    def __len__(self) -> int:
        return len(self._heap)

    def peek_time(self) -> float:
        return self._heap[0][0] if self._heap else float("inf")

    def items(self) -> list[Any]:
        return sorted(self._heap)
