"""Signals during an apply: SIGTERM becomes an exception the executor handles like ^C, and both wait
while the cordons are being undone (a second ^C must not leave a node cordoned).

Only the main thread can install handlers; elsewhere (a test thread, a web worker) nothing changes.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


class Terminated(BaseException):
    """SIGTERM arrived during the run (raised like KeyboardInterrupt, so nothing swallows it)."""


class SignalGuard:
    def __init__(self) -> None:
        self.deferring = False
        self.pending: int | None = None   # a signal that arrived while deferring

    @staticmethod
    def _main() -> bool:
        return threading.current_thread() is threading.main_thread()

    @contextmanager
    def running(self) -> Iterator[None]:
        """SIGTERM raises Terminated and ^C KeyboardInterrupt (whatever handlers the CLI installed),
        unless deferred; the previous handlers come back afterwards."""
        if not self._main():
            yield
            return

        def on_term(signum, frame):
            if self.deferring:
                self.pending = signum
                return
            raise Terminated()

        def on_int(signum, frame):
            if self.deferring:
                self.pending = signum
                return
            raise KeyboardInterrupt()

        old_term = signal.signal(signal.SIGTERM, on_term)
        old_int = signal.signal(signal.SIGINT, on_int)
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, old_term)
            signal.signal(signal.SIGINT, old_int)

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """^C and SIGTERM are noted, not raised, until the block is done."""
        if not self._main():
            yield
            return
        self.deferring = True

        def note(signum, frame):
            self.pending = signum

        old_int = signal.signal(signal.SIGINT, note)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, old_int)
            self.deferring = False
