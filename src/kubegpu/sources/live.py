"""The live source: read-only, paginated LIST calls against the API server of a kubeconfig context.

lightkube supplies configuration, TLS and authentication (tokens, client certificates, exec
plugins, in-cluster tokens that rotate); the bytes of every item are kept raw (msgspec.Raw) so
`kubegpu snapshot` writes back exactly what the server sent. List items arrive without
apiVersion/kind (the API server leaves them to the List); we splice them in from the List.
Only GET requests are ever sent.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

import httpx2
import msgspec

from lightkube.core.exceptions import ConfigError

from kubegpu.errors import SourceError, UsageError
from kubegpu.model.integers import int_or_none
from kubegpu.sources.documents import Documents
from kubegpu.sources.kubeconfig import (ClusterConfig, Timeouts, credential_error, http_client, request_timeouts,
                                        resolve_cluster, transport_error)

Progress = Callable[[str, int], None]


@dataclass(frozen=True)
class ListedKind:
    """One resource kubegpu lists, and the API versions it understands, newest first."""

    group: str
    versions: tuple[str, ...]
    plural: str
    kind: str
    namespaced: bool
    optional: bool = False  # a CRD most clusters do not have

    def path(self, version: str) -> str:
        return f"/api/{version}/{self.plural}" if not self.group else f"/apis/{self.group}/{version}/{self.plural}"

    @property
    def label(self) -> str:
        return self.plural if not self.group else f"{self.group} {self.plural}"


def _core(plural: str, kind: str, namespaced: bool = True) -> ListedKind:
    return ListedKind("", ("v1",), plural, kind, namespaced)


# Everything the engines read. Order matters only for the progress line.
DEFAULT_KINDS: tuple[ListedKind, ...] = (
    _core("nodes", "Node", namespaced=False),
    _core("pods", "Pod"),
    _core("namespaces", "Namespace", namespaced=False),
    _core("events", "Event"),
    _core("services", "Service"),
    _core("configmaps", "ConfigMap"),  # time-slicing configs, CoreDNS Corefile, CPA and CA settings
    _core("persistentvolumeclaims", "PersistentVolumeClaim"),
    _core("persistentvolumes", "PersistentVolume", namespaced=False),
    ListedKind("apps", ("v1",), "deployments", "Deployment", True),
    ListedKind("apps", ("v1",), "statefulsets", "StatefulSet", True),
    ListedKind("apps", ("v1",), "daemonsets", "DaemonSet", True),
    ListedKind("apps", ("v1",), "replicasets", "ReplicaSet", True),
    ListedKind("batch", ("v1",), "jobs", "Job", True),
    ListedKind("batch", ("v1",), "cronjobs", "CronJob", True),
    ListedKind("policy", ("v1",), "poddisruptionbudgets", "PodDisruptionBudget", True),
    ListedKind("scheduling.k8s.io", ("v1",), "priorityclasses", "PriorityClass", False),
    ListedKind("storage.k8s.io", ("v1",), "storageclasses", "StorageClass", False),
    ListedKind("storage.k8s.io", ("v1",), "csinodes", "CSINode", False),
    ListedKind("storage.k8s.io", ("v1",), "volumeattachments", "VolumeAttachment", False),  # NodeVolumeLimits
    ListedKind("networking.k8s.io", ("v1",), "networkpolicies", "NetworkPolicy", True),
    ListedKind("autoscaling", ("v2",), "horizontalpodautoscalers", "HorizontalPodAutoscaler", True),
    # optional CRDs: listed when the cluster serves them, silently skipped otherwise
    ListedKind("scheduling.x-k8s.io", ("v1alpha1",), "podgroups", "PodGroup", True, optional=True),
    ListedKind("scheduling.volcano.sh", ("v1beta1",), "podgroups", "PodGroup", True, optional=True),
    ListedKind("karpenter.sh", ("v1", "v1beta1"), "nodepools", "NodePool", False, optional=True),
    ListedKind("monitoring.coreos.com", ("v1",), "prometheusrules", "PrometheusRule", True, optional=True),
    ListedKind("monitoring.coreos.com", ("v1",), "prometheuses", "Prometheus", True, optional=True),
    ListedKind("nvidia.com", ("v1",), "clusterpolicies", "ClusterPolicy", False, optional=True),
    ListedKind("serving.kserve.io", ("v1alpha1",), "localmodelcaches", "LocalModelCache", False, optional=True),
    ListedKind("serving.kserve.io", ("v1alpha1",), "localmodelnodegroups", "LocalModelNodeGroup", False,
               optional=True),
    ListedKind("serving.kserve.io", ("v1alpha1",), "localmodelnodes", "LocalModelNode", False, optional=True),
    ListedKind("serving.kserve.io", ("v1beta1",), "inferenceservices", "InferenceService", True, optional=True),
    ListedKind("kubeflow.org", ("v1",), "pytorchjobs", "PyTorchJob", True, optional=True),
    ListedKind("ray.io", ("v1",), "rayclusters", "RayCluster", True, optional=True),
    ListedKind("data.fluid.io", ("v1alpha1",), "datasets", "Dataset", True, optional=True),
)

DEFAULT_PAGE_SIZE = 500


class _ListMeta(msgspec.Struct):
    continue_: str | None = msgspec.field(name="continue", default=None)
    resourceVersion: str | None = None


class _ListPage(msgspec.Struct):
    apiVersion: str | None = None
    kind: str | None = None
    metadata: _ListMeta | None = None
    items: list[msgspec.Raw] | None = None


class _TypeMeta(msgspec.Struct):
    apiVersion: Any = None
    kind: Any = None


class _Version(msgspec.Struct):
    gitVersion: str | None = None


class _GroupVersion(msgspec.Struct):
    version: str


class _Group(msgspec.Struct):
    name: str
    versions: list[_GroupVersion] = []
    preferredVersion: _GroupVersion | None = None


class _GroupList(msgspec.Struct):
    groups: list[_Group] = []


_PAGE = msgspec.json.Decoder(_ListPage)
_TYPE_META = msgspec.json.Decoder(_TypeMeta)


def with_type_meta(raw: msgspec.Raw, api_version: str, kind: str) -> msgspec.Raw:
    """The item with apiVersion/kind added where missing; the rest of its bytes unchanged."""
    head = _TYPE_META.decode(raw)
    if head.apiVersion and head.kind:
        return raw
    fields = []
    if not head.apiVersion:
        fields.append(b'"apiVersion":' + msgspec.json.encode(api_version))
    if not head.kind:
        fields.append(b'"kind":' + msgspec.json.encode(kind))
    body = bytes(raw)
    rest = body[1:]
    sep = b"" if rest.lstrip().startswith(b"}") else b","
    return msgspec.Raw(b"{" + b",".join(fields) + sep + rest)


# --- errors: every failure becomes one line that says what to do -------------------------------

class ApiStatus(Exception):
    """A non-200 answer of the API server (its v1 Status, when it sent one)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.had_continue = False

    @classmethod
    def from_response(cls, code: int, body: bytes, content_type: str) -> "ApiStatus":
        reason, message = "", ""
        if content_type.startswith("application/json"):
            try:
                status = msgspec.json.decode(body, type=_Status)
                reason, message = status.reason or "", status.message or ""
            except (msgspec.DecodeError, msgspec.ValidationError):
                pass
        if not message:
            message = " ".join(body[:200].decode("utf-8", "replace").split())
        return cls(code, reason or _REASONS.get(code, "Error"), message)


class _Status(msgspec.Struct):
    reason: str | None = None
    message: str | None = None


_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 410: "Gone",
            429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}
_FORBIDDEN_USER = re.compile(r'User "([^"]*)"')
RBAC_MANIFEST = "deploy/rbac/kubegpu-readonly.yaml"


def status_error(status: ApiStatus, cluster: ClusterConfig, *, verb: str, kind: ListedKind | None,
                 path: str) -> SourceError:
    """The one-line SourceError for an API server's refusal."""
    what = kind.label if kind else path
    url = f"{cluster.server.rstrip('/')}{path}"
    if status.code == 401:
        return SourceError(f"credentials rejected (401 Unauthorized) for context {cluster.context}: expired or "
                           "invalid token; run your login/refresh (e.g. `kubectl get nodes`) and retry")
    if status.code == 403:
        m = _FORBIDDEN_USER.search(status.message)
        user = m.group(1) if m else (cluster.user or "unknown")
        scope = " at cluster scope" if kind else ""
        return SourceError(f"RBAC forbids {verb} {what}{scope} for user {user} (403 Forbidden): "
                           f"apply {RBAC_MANIFEST}")
    if status.code == 404:
        return SourceError(f"{url}: 404 Not Found; is {cluster.server} a Kubernetes API server?")
    if status.code == 410:
        return SourceError(f"listing {what}: the continue token expired again after a restart (410 Gone); "
                           "the cluster changes faster than kubegpu can page through it: retry")
    if status.code == 429:
        return SourceError(f"the API server throttles kubegpu (429 Too Many Requests) on {url}; retry later")
    return SourceError(f"GET {url}: {status.code} {status.reason}: {status.message}")


# --- requests ----------------------------------------------------------------------------------

class ApiClient:
    """GET requests to one API server; transport failures become one-line SourceErrors."""

    def __init__(self, cluster: ClusterConfig, timeouts: Timeouts) -> None:
        self.cluster = cluster
        self.timeouts = timeouts
        self.http = http_client(cluster, timeouts)

    def get(self, path: str, params: dict[str, str] | None = None) -> bytes:
        """The body of a 200 answer; ApiStatus for any other status."""
        for attempt in range(4):
            status, headers, content = self._bounded_get(path, params)
            if status == 200:
                return content
            retry_after = int_or_none(headers.get("Retry-After", ""), lo=0)
            if status in (429, 503) and retry_after is not None and attempt < 3:
                time.sleep(min(retry_after, 5))  # client-go honours Retry-After the same way
                continue
            raise ApiStatus.from_response(status, content, headers.get("Content-Type", ""))
        raise AssertionError("unreachable")

    def _bounded_get(self, path: str, params: dict[str, str] | None) -> tuple[int, Any, bytes]:
        """One GET within a total time bound (the read timeout bounds each read; a server that
        trickles a byte at a time never trips it, so a timer closes the connection at the deadline)."""
        total = self.timeouts.read
        expired = threading.Event()

        def abort() -> None:
            expired.set()
            self.http.close()

        timer = threading.Timer(total, abort)
        timer.daemon = True
        timer.start()
        deadline = time.monotonic() + total
        try:
            with self.http.stream("GET", path, params=params) as resp:
                chunks = []
                for chunk in resp.iter_bytes():
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        expired.set()
                        break
                if not expired.is_set():
                    return resp.status_code, resp.headers, b"".join(chunks)
        except httpx2.HTTPError as err:
            if not expired.is_set():
                raise transport_error(err, self.cluster, self.timeouts, path) from None
        except (ConfigError, OSError) as err:
            if not expired.is_set():
                raise credential_error(err, self.cluster) from None
        except RuntimeError:  # httpx refuses a request on the client the timer closed
            if not expired.is_set():
                raise
        finally:
            timer.cancel()
        raise SourceError(f"{self.cluster.server} did not answer GET {path} within {total:g} s "
                          "(set KUBEGPU_TIMEOUT=SECONDS to wait longer)")

    def close(self) -> None:
        self.http.close()


def _discovery_get(api: ApiClient, path: str) -> bytes:
    try:
        return api.get(path)
    except ApiStatus as status:
        raise status_error(status, api.cluster, verb="get", kind=None, path=path) from None


def server_version(api: ApiClient) -> str | None:
    try:
        return msgspec.json.decode(_discovery_get(api, "/version"), type=_Version).gitVersion
    except msgspec.DecodeError:
        raise SourceError(f"{api.cluster.server}/version: not a Kubernetes version document; "
                          "is this a Kubernetes API server?") from None


def served_versions(api: ApiClient) -> dict[str, list[str]]:
    """group -> versions the server serves, preferred first (legacy discovery, GET /apis)."""
    try:
        groups = msgspec.json.decode(_discovery_get(api, "/apis"), type=_GroupList).groups
    except msgspec.DecodeError:
        raise SourceError(f"{api.cluster.server}/apis: not an API group list; "
                          "is this a Kubernetes API server?") from None
    served: dict[str, list[str]] = {}
    for g in groups:
        versions = [v.version for v in g.versions]
        if g.preferredVersion and g.preferredVersion.version in versions:
            versions.remove(g.preferredVersion.version)
            versions.insert(0, g.preferredVersion.version)
        served[g.name] = versions
    return served


def pick_version(kind: ListedKind, served: dict[str, list[str]]) -> str | None:
    """The version to list `kind` in: the server's preferred one if we understand it."""
    if not kind.group:
        return kind.versions[0]
    return next((v for v in served.get(kind.group, []) if v in kind.versions), None)


def _pages(api: ApiClient, path: str, page_size: int) -> Iterator[_ListPage]:
    cont: str | None = None
    while True:
        params = {"limit": str(page_size)}
        if cont:
            params["continue"] = cont
        try:
            page = _PAGE.decode(api.get(path, params))
        except ApiStatus as status:
            status.had_continue = bool(cont)
            raise
        except (msgspec.DecodeError, msgspec.ValidationError) as err:
            raise SourceError(f"{api.cluster.server}{path}: not a Kubernetes List: {err}") from None
        yield page
        previous, cont = cont, page.metadata.continue_ if page.metadata else None
        if not cont:
            return
        if cont == previous:
            raise SourceError(f"{api.cluster.server}{path}: the server returned the same continue token twice")


class KindList(msgspec.Struct):
    """One kind's items (apiVersion/kind spliced in) and the resourceVersion the list is current at."""

    items: list[msgspec.Raw]
    resource_version: str = ""


def list_kind(api: ApiClient, kind: ListedKind, version: str, *, page_size: int = DEFAULT_PAGE_SIZE,
              progress: Progress | None = None) -> KindList | None:
    """Every item of one kind, page by page; None when the server does not serve it (404).

    An expired continue token (410 Gone, the server compacted its history while we paged)
    restarts the list once from the beginning, as kubectl users would by hand. The CLI and
    `serve`'s live watch (sources/watch.py) both list through here.
    """
    path = kind.path(version)
    api_version = version if not kind.group else f"{kind.group}/{version}"
    for attempt in (1, 2):
        items: list[msgspec.Raw] = []
        rv = ""
        try:
            for page in _pages(api, path, page_size):
                listed = page.kind[:-4] if page.kind and page.kind.endswith("List") else ""
                item_kind = listed or kind.kind
                items.extend(with_type_meta(raw, page.apiVersion or api_version, item_kind)
                             for raw in page.items or [])
                rv = (page.metadata.resourceVersion if page.metadata else None) or rv
                if progress:
                    progress(kind.label, len(items))
            return KindList(items, rv)
        except ApiStatus as status:
            if status.code == 404 and (kind.optional or kind.group):
                return None
            if status.code == 410 and status.had_continue and attempt == 1:
                continue
            raise status_error(status, api.cluster, verb="list", kind=kind, path=path) from None
    raise AssertionError("unreachable")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextlib.contextmanager
def _tty_progress(enabled: bool) -> Iterator[Progress | None]:
    """A transient 'listing pods: 1,500' line on stderr while reading, on a terminal only."""
    if not enabled:
        yield None
        return
    from rich.console import Console  # lazy: rich costs ~20-100 ms of start-up and only a terminal needs it

    console = Console(stderr=True, highlight=False)
    with console.status("connecting", spinner="dots") as status:
        yield lambda label, count: status.update(f"listing {label}: {count:,}")


def read_live(*, kubeconfig: str | None = None, context: str | None = None,
              kinds: tuple[ListedKind, ...] = DEFAULT_KINDS, page_size: int = DEFAULT_PAGE_SIZE,
              progress: Progress | None = None) -> Documents:
    """Every object kubegpu reads, from the cluster kubectl would use with these flags."""
    if page_size < 1:
        raise UsageError(f"page size must be at least 1, got {page_size}")
    cluster = resolve_cluster(kubeconfig, context)
    api = ApiClient(cluster, request_timeouts(os.environ.get("KUBEGPU_TIMEOUT")))
    docs = Documents(source=f"live:{cluster.context}", captured_at=_now())
    try:
        with _tty_progress(progress is None and sys.stderr.isatty()) as tty:
            report = progress or tty
            docs.server_version = server_version(api)
            served = served_versions(api)
            for kind in kinds:
                version = pick_version(kind, served)
                if version is None:
                    continue
                listed = list_kind(api, kind, version, page_size=page_size, progress=report)
                origin = f"{cluster.server.rstrip('/')}{kind.path(version)}"
                for raw in listed.items if listed is not None else ():
                    docs.add(raw, origin)
    finally:
        api.close()
    return docs
