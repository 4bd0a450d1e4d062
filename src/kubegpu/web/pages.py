"""Server-rendered pages: overview with the GPU map, pending pods, one pod's why, defrag preview,
audit, simulate results.

Jinja2 with autoescape on for every template: a cluster-provided string is always text.
Rendered pages are cached per cluster state and query, like the API.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from jinja2 import Environment, FileSystemLoader
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from kubegpu.audit.catalog import PITFALLS
from kubegpu.defrag.preview import largest_pending
from kubegpu.errors import KubegpuError
from kubegpu.fragmentation.gpumap import NodeMap
from kubegpu.model.text import counted
from kubegpu.web.api import error, parse_size
from kubegpu.web.results import read_results
from kubegpu.web.store import ModelStore
from kubegpu.web.views import ClusterViews, blocker_of, is_blocked

TEMPLATES = Path(__file__).with_name("templates")
MAP_NODE_LIMIT = 160   # above this many GPU nodes (after filters) the map shows pools, with drill-down
QUERY = {"/": frozenset({"pool", "model", "namespace"}), "/pending": frozenset({"namespace"}),
         "/defrag": frozenset({"size", "for"})}

_env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True)
_env.filters["counted"] = counted  # '1 pod', '2 pods': never 'pod(s)'
_env.tests["match_ns"] = lambda pod, ns: pod.startswith(ns + "/")


def pool_of(node: NodeMap) -> str:
    return node.pool or "(none)"


def model_of(node: NodeMap) -> str:
    return node.gpu_model or "unknown"


def filter_map(nodes: list[NodeMap], pool: str, model: str) -> list[NodeMap]:
    return [n for n in nodes if (not pool or pool_of(n) == pool) and (not model or model_of(n) == model)]


def device_counts(nodes: list[NodeMap]) -> Counter:
    """Devices per map state (what the page's legend counts)."""
    return Counter(d.state for n in nodes for d in n.devices)


def pool_summary(nodes: list[NodeMap]) -> list[dict]:
    """One row per (pool, GPU model): devices by state and stranded GPUs, for the aggregated map."""
    rows: dict[tuple[str, str], dict] = {}
    for n in nodes:
        key = (pool_of(n), model_of(n))
        row = rows.setdefault(key, {"pool": key[0], "model": key[1], "nodes": 0, "states": Counter(),
                                    "stranded_gpus": 0.0})
        row["nodes"] += 1
        row["states"].update(d.state for d in n.devices)
        row["stranded_gpus"] += n.stranded_gpus
    return [rows[k] for k in sorted(rows)]


class Pages:
    def __init__(self, store: ModelStore, *, results_dir: str | None = None, decisions: bool = False,
                 rebalance=None) -> None:
        self.store = store
        self.results_dir = results_dir
        self.decisions = decisions   # serve --ledger: the why page links the pod's decisions
        self.rebalance = rebalance   # serve --rebalance-journal: a RebalanceJournal, one line on the overview

    def routes(self) -> list[Route]:
        return [Route("/", self.overview), Route("/pending", self.pending),
                Route("/why/{namespace}/{name}", self.why), Route("/defrag", self.defrag),
                Route("/audit", self.audit), Route("/simulate", self.simulate)]

    # ---- helpers ---------------------------------------------------------------------------
    def _page(self, template: str, status: int = 200, **context) -> HTMLResponse:
        s = self.store
        age = s.age()
        header = {"source": s.views.state.source if s.views else "", "age": None if age is None else int(age),
                  "stale": s.stale(), "live": s.health.live, "error": s.health.last_error,
                  "loaded": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(s.health.loaded_at))
                  if s.health.loaded_at else None}
        html = _env.get_template(template).render(header=header, **context)
        return HTMLResponse(html, status_code=status)

    def _views(self) -> ClusterViews | None:
        return self.store.views

    def _loading(self) -> HTMLResponse:
        return self._page("message.html", status=503, title="Loading",
                          message="No cluster data yet. " + (self.store.health.last_error or ""))

    async def not_found(self, request: Request, exc) -> Response:
        code = getattr(exc, "status_code", 404)
        if request.url.path.startswith(("/api/", "/static/", "/metrics")):
            return error(code, "not found" if code == 404 else "method not allowed")
        return self._page("message.html", status=code, title="Not found" if code == 404 else "Not allowed",
                          message=f"Nothing at {request.url.path}.")

    # ---- pages -----------------------------------------------------------------------------
    async def overview(self, request: Request) -> Response:
        v = self._views()
        if v is None:
            return self._loading()
        q = request.query_params
        pool, model, namespace = q.get("pool", ""), q.get("model", ""), q.get("namespace", "")
        nodes = filter_map(v.gpumap.nodes, pool, model)
        aggregated = len(nodes) > MAP_NODE_LIMIT
        namespaces = sorted({p.namespace or "default" for p in v.state.pods})
        rebalance = await run_in_threadpool(self.rebalance.refresh) if self.rebalance is not None else None
        return self._page(
            "overview.html", title="Overview", v=v, frag=v.frag, totals=v.status.totals,
            nodes=nodes, aggregated=aggregated, pools=pool_summary(nodes) if aggregated else [],
            counts=device_counts(nodes), pool=pool, model=model, namespace=namespace,
            gmap=v.gpumap, all_pools=sorted({pool_of(n) for n in v.gpumap.nodes}),
            all_models=sorted({model_of(n) for n in v.gpumap.nodes}),
            namespaces=namespaces, pending=sum(1 for r in v.pending_gpu if is_blocked(r)),
            audit=v.audit, map_limit=MAP_NODE_LIMIT, rebalance=rebalance)

    async def pending(self, request: Request) -> Response:
        v = self._views()
        if v is None:
            return self._loading()
        namespace = request.query_params.get("namespace", "")
        reports = [r for r in v.why if not namespace or r.pod.startswith(namespace + "/")]
        return self._page("pending.html", title="Pending pods", reports=reports, blocker_of=blocker_of,
                          namespace=namespace, gpu_pods={r.pod for r in v.pending_gpu})

    async def why(self, request: Request) -> Response:
        v = self._views()
        if v is None:
            return self._loading()
        ns, name = request.path_params["namespace"], request.path_params["name"]
        report = await run_in_threadpool(v.why_pod, ns, name)
        if report is None:
            return self._page("message.html", status=404, title="No such pod",
                              message=f"Pod {ns}/{name} is not in the cluster.")
        return self._page("why.html", title=f"Why {report.pod}", r=report, blocker=blocker_of(report),
                          node_limit=200, decisions=self.decisions)

    async def defrag(self, request: Request) -> Response:
        v = self._views()
        if v is None:
            return self._loading()
        q = request.query_params
        size = parse_size(q["size"]) if "size" in q else None
        target = q.get("for") or None
        if "size" in q and size is None:
            return self._page("message.html", status=400, title="Bad request", message="size must be 1..1024")
        if size is None and target is None:
            target = self._largest_pending(v)
            if target is None:
                size = 4
        try:
            plan = await run_in_threadpool(lambda: v.defrag_plan(size=size) if size is not None
                                           else v.defrag_plan(pod=target))
        except KubegpuError as err:
            return self._page("message.html", status=404, title="No plan", message=str(err))
        changed = {m.from_ for m in plan.moves} | {m.to for m in plan.moves} | {t.node for t in plan.targets}
        mapped = v.gpumap.nodes
        before = [n for n in mapped if n.name in changed] if len(mapped) > MAP_NODE_LIMIT else mapped
        after = await run_in_threadpool(v.defrag_after_map, plan) if plan.moves else []
        after = [n for n in after if n.name in {b.name for b in before}]
        return self._page("defrag.html", title="Defrag preview", plan=plan, before=before, after=after,
                          reference_size=v.gpumap.reference_size,
                          size=size, target=target, changed=changed,
                          pending=[r.pod for r in v.pending_gpu if is_blocked(r)])

    @staticmethod
    def _largest_pending(v: ClusterViews) -> str | None:
        """The doctor preview's rule (defrag.preview.largest_pending) among the blocked pods."""
        pod, _ = largest_pending(v.state, {r.pod for r in v.pending_gpu if is_blocked(r)})
        return pod.key if pod is not None else None

    async def audit(self, request: Request) -> Response:
        v = self._views()
        if v is None:
            return self._loading()
        groups: dict[int, list] = {}
        for f in v.audit.findings:
            groups.setdefault(f.pitfall, []).append(f)
        return self._page("audit.html", title="Audit", audit=v.audit, groups=sorted(groups.items()),
                          pitfalls=PITFALLS)

    async def simulate(self, request: Request) -> Response:
        runs, problems = await run_in_threadpool(read_results, self.results_dir) if self.results_dir else ([], [])
        return self._page("simulate.html", title="Simulation results", runs=runs, problems=problems,
                          results_dir=self.results_dir)
