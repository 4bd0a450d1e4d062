"""The turn loop the agent and the controller share: an API blip is retried with back-off, not a crash.

A DaemonSet pod that exits on the first refused connection becomes CrashLoopBackOff on every
node at once when the API server restarts. In loop mode a turn that could not reach the API
is logged as one line saying when the next try is, retried after 1, 2, 4 ... seconds (capped
at the interval), and the recovery is logged too. With `--once` the error is the answer.
"""

from __future__ import annotations

from typing import Callable

from kubegpu.errors import SourceError

FIRST_RETRY_SECONDS = 1.0


def retry_delay(failures: int, interval: float) -> float:
    """Seconds before the next try after `failures` consecutive failed turns (1, 2, 4 ... <= interval)."""
    cap = max(FIRST_RETRY_SECONDS, interval)
    return min(cap, FIRST_RETRY_SECONDS * 2 ** min(failures - 1, 30))


def run_turns(turn: Callable[[], int], *, once: bool, interval: float, sleep: Callable[[float], None],
              log: Callable[[str], None], what: str) -> int:
    """Call `turn` (which returns an exit status) until stopped; with `once`, its status (errors raise)."""
    failures = 0
    while True:
        if once:
            return turn()
        try:
            turn()
        except SourceError as err:
            failures += 1
            delay = retry_delay(failures, interval)
            log(f"{what}: the API could not be reached ({err}); retrying in {delay:g} s "
                f"(failure {failures} in a row)")
            sleep(delay)
            continue
        if failures:
            log(f"{what}: the API answers again after {failures} failed turn{'s' if failures > 1 else ''}")
            failures = 0
        sleep(interval)
