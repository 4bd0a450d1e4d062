"""The `kubegpu serve` ASGI application: JSON API, /metrics, health probes, pages, static files.

Everything reads the ModelStore's current views; nothing here talks to a cluster or mutates one.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kubegpu.web.api import QUERY as API_QUERY
from kubegpu.web.api import Api
from kubegpu.web.decisions import QUERY as DECISIONS_QUERY
from kubegpu.web.decisions import DecisionLog, DecisionRoutes
from kubegpu.web.guard import Guard
from kubegpu.web.metrics import LIVE_TTL, Exposition, RebalanceCollector
from kubegpu.web.pages import QUERY as PAGE_QUERY
from kubegpu.web.pages import Pages
from kubegpu.web.rebalance import RebalanceJournal
from kubegpu.web.store import ModelStore

STATIC = Path(__file__).with_name("static")


def create_app(store: ModelStore, *, metrics_pods: bool = False, mix_name: str = "cluster",
               results_dir: str | None = None, metrics_ttl: float = LIVE_TTL, ledger: str | None = None,
               rebalance_journal: str | None = None) -> Guard:
    """The whole server as one ASGI callable (the Guard wraps Starlette); `ledger` adds the decision log,
    `rebalance_journal` the rebalancer's metrics and overview line."""
    api = Api(store)
    journal = RebalanceJournal(rebalance_journal) if rebalance_journal is not None else None
    pages = Pages(store, results_dir=results_dir, decisions=ledger is not None, rebalance=journal)
    exposition = Exposition(store, pods=metrics_pods, mix_name=mix_name, live_ttl=metrics_ttl)
    if journal is not None:
        exposition.live.register(RebalanceCollector(journal))
    store.warmers.append(exposition.warm)
    if store.views is not None:
        exposition.warm(store.views)

    async def metrics(request: Request) -> Response:
        if journal is not None:
            await run_in_threadpool(journal.refresh)
        body, content_type = exposition.render(request.headers.get("accept", ""))
        return Response(body, headers={"Content-Type": content_type})

    routes = [
        Route("/healthz", api.healthz),
        Route("/readyz", api.readyz),
        Route("/metrics", metrics),
        Route("/api/status", api.simple),
        Route("/api/frag", api.simple),
        Route("/api/audit", api.simple),
        Route("/api/why", api.why),
        Route("/api/defrag", api.defrag),
        *pages.routes(),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    query = {**API_QUERY, **PAGE_QUERY}
    if ledger is not None:
        decisions = DecisionRoutes(DecisionLog(ledger), pages)
        routes[:0] = [Route("/api/decisions", decisions.api), Route("/decisions", decisions.page)]
        query.update(DECISIONS_QUERY)
    app = Starlette(routes=routes, debug=False, exception_handlers={404: pages.not_found, 405: pages.not_found})
    return Guard(app, exposition.requests, query)
