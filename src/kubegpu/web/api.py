"""The JSON API: `/api/X` returns exactly `kubegpu X -o json` of the current cluster model.

Handlers only pick the cached view and serialise it with the CLI's writer; no engine logic here.
Anything that may compute (a first why or defrag plan for a pod, a first serialisation) runs in
the thread pool, so /metrics and the probes keep answering meanwhile.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from kubegpu.jsontext import compact, error_body, json_bytes
from kubegpu.money.fixes import defrag_json
from kubegpu.money.why import why_json
from kubegpu.errors import InputError, UsageError
from kubegpu.web.store import ModelStore

JSON = "application/json"
QUERY = {"/api/why": frozenset({"pod", "namespace"}), "/api/defrag": frozenset({"size", "for"})}


def error(code: int, message: str) -> Response:
    return Response(error_body(code, message), status_code=code, media_type=JSON)


def split_pod(value: str, namespace: str | None) -> tuple[str, str] | None:
    """'ns/name' or 'name' (in `namespace`, else default), as `kubegpu why` reads it."""
    ns, name = (namespace or "default"), value
    if "/" in value:
        ns, name = value.split("/", 1)
    if not ns or not name or "/" in name:
        return None
    return ns, name


def parse_size(raw: str) -> int | None:
    """A GPU count 1..1024 in ASCII digits (str.isdigit also accepts '²' and '④', which int() refuses)."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 4:
        return None
    return int(raw) if 1 <= int(raw) <= 1024 else None


class Api:
    def __init__(self, store: ModelStore) -> None:
        self.store = store

    def _views(self):
        return self.store.views

    def _unavailable(self) -> Response:
        return error(503, "no cluster data yet: " + (self.store.health.last_error or "loading"))

    async def simple(self, request: Request) -> Response:
        views = self._views()
        if views is None:
            return self._unavailable()
        name = request.url.path.rsplit("/", 1)[-1]
        return Response(await run_in_threadpool(views.json, name), media_type=JSON)

    async def why(self, request: Request) -> Response:
        views = self._views()
        if views is None:
            return self._unavailable()
        q = request.query_params
        if "pod" not in q:
            if "namespace" in q:
                return error(400, "namespace= needs pod=; /api/why without pod= lists every pending pod")
            return Response(await run_in_threadpool(views.json, "why"), media_type=JSON)
        target = split_pod(q["pod"], q.get("namespace"))
        if target is None:
            return error(400, f"pod={q['pod']!r} is not NAME or NAMESPACE/NAME")
        report = await run_in_threadpool(views.why_pod, *target)
        if report is None:
            return error(404, f"pod {target[0]}/{target[1]} is not in the cluster")
        body = await run_in_threadpool(lambda: json_bytes(why_json(report, views.wait_costs)))
        return Response(body, media_type=JSON)

    async def defrag(self, request: Request) -> Response:
        views = self._views()
        if views is None:
            return self._unavailable()
        q = request.query_params
        if ("size" in q) == ("for" in q):
            return error(400, "choose one goal: ?size=K or ?for=NAMESPACE/NAME")
        if "size" in q:
            size = parse_size(q["size"])
            if size is None:
                return error(400, f"size={q['size']!r} is not a GPU count between 1 and 1024")
            plan = await run_in_threadpool(lambda: views.defrag_plan(size=size))
        else:
            target = split_pod(q["for"], None)
            if target is None:
                return error(400, f"for={q['for']!r} is not NAMESPACE/NAME")
            try:
                plan = await run_in_threadpool(lambda: views.defrag_plan(pod=f"{target[0]}/{target[1]}"))
            except InputError as err:      # no such pod or gang
                return error(404, str(err))
            except UsageError as err:      # the pod is not pending
                return error(409, str(err))
        body = await run_in_threadpool(lambda: json_bytes(defrag_json(plan, views.prices)))
        return Response(body, media_type=JSON)

    async def healthz(self, request: Request) -> Response:
        return Response("ok\n", media_type="text/plain")

    async def readyz(self, request: Request) -> Response:
        s = self.store
        age = s.age()
        body = {"ready": s.ready(), "data_age_seconds": None if age is None else round(age, 1),
                "stale_after_seconds": s.stale_after, "last_error": s.health.last_error or None,
                "generation": s.generation}
        return Response(compact(body), status_code=200 if body["ready"] else 503, media_type=JSON)
