"""`kubegpu serve --ledger PATH`: the extender's decision log at /api/decisions and on a Decisions page.

The log file (and its rotated predecessor) is read again only when its size or modification time
changed, so a page view costs a stat, not a parse. `?pod=NS/NAME` (or NAME in any namespace)
narrows both to one pod; the page shows the newest records first.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from kubegpu.errors import InputError
from kubegpu.extender.ledger import Decision, matches, read_ledger, shadow_totals, summary
from kubegpu.jsontext import json_bytes
from kubegpu.web.api import JSON, error

QUERY = {"/api/decisions": frozenset({"pod"}), "/decisions": frozenset({"pod"})}
PAGE_LIMIT = 500


class DecisionLog:
    """The ledger file, parsed once per change."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.lock = threading.Lock()
        self._stamp: tuple | None = None
        self._records: list[Decision] = []

    def _stat(self) -> tuple:
        out = []
        for f in (self.path.with_name(self.path.name + ".1"), self.path):
            try:
                st = os.stat(f)
                out.append((st.st_size, st.st_mtime_ns))
            except OSError:
                out.append(None)
        return tuple(out)

    def records(self, pod: str | None = None) -> list[Decision]:
        """Every record (oldest first), or one pod's; InputError when the file cannot be read."""
        with self.lock:
            stamp = self._stat()
            if stamp != self._stamp:
                self._records = read_ledger(self.path) if any(stamp) else []
                self._stamp = stamp
            items = self._records
        return [d for d in items if matches(d, pod)] if pod else items


class DecisionRoutes:
    def __init__(self, log: DecisionLog, pages) -> None:
        self.log = log
        self.pages = pages

    async def api(self, request: Request) -> Response:
        pod = request.query_params.get("pod") or None
        try:
            records = await run_in_threadpool(self.log.records, pod)
        except InputError as err:
            return error(503, f"decision log unreadable: {err}")
        return Response(json_bytes(records), media_type=JSON)

    async def page(self, request: Request) -> Response:
        pod = request.query_params.get("pod") or None
        try:
            records = await run_in_threadpool(self.log.records, pod)
        except InputError as err:
            return self.pages._page("message.html", status=503, title="Decision log unreadable", message=str(err))
        rows = [{"time": d.time, "mode": d.mode.removeprefix("extender-"), "pod": f"{d.pod.namespace}/{d.pod.name}",
                 "outcome": d.outcome, "chosen": d.chosen or "", "why": summary(d)}
                for d in reversed(records[-PAGE_LIMIT:])]
        title = f"Decisions for {pod}" if pod else "Decisions"
        return self.pages._page("decisions.html", title=title, rows=rows, pod=pod, total=len(records),
                                limit=PAGE_LIMIT, path=str(self.log.path), shadow=shadow_totals(records))
