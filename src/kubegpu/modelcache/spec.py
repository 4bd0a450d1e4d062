"""The `ModelCache` object (kubegpu.io/v1alpha1): typed, validated, with one-line errors.

One ModelCache names one model (metadata.name) and the version every target node must hold:
a revision name plus a manifest of files with sizes and sha256 digests. The same object is read
from a file (offline, `--cache FILE`) or from the cluster (the CRD in deploy/crds/). Every
error names the object and the field: `ModelCache/llama: field spec.files[1].path: ...`.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import msgspec

from kubegpu.errors import InputError
from kubegpu.model.quantity import ceil_value, parse_quantity
from kubegpu.sources.snapshot import read_snapshot

API_VERSION = "kubegpu.io/v1alpha1"
KIND = "ModelCache"
PLURAL = "modelcaches"
GROUP, VERSION = API_VERSION.split("/")
DEFAULT_ROOT = "/var/lib/kubegpu/models"
NOT_READY_TAINT = "kubegpu.io/model-not-ready"
HOLDS_ANNOTATION_PREFIX = "models.kubegpu.io/"  # node annotation: models.kubegpu.io/<model> = <version>
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")  # DNS subdomain: it becomes a folder and a label value
_VERSION_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9._]*[A-Za-z0-9])?$")


class _Strict(msgspec.Struct, rename="camel", forbid_unknown_fields=True, omit_defaults=True):
    pass


class ModelFile(_Strict, frozen=True):
    path: str
    size: int
    sha256: str


class S3Source(_Strict, frozen=True):
    endpoint: str
    bucket: str
    prefix: str = ""


class Source(_Strict, frozen=True):
    url: str | None = None
    s3: S3Source | None = None
    path: str | None = None
    # how the nodes reach the source, for `plan`'s ETA: nfs | object-store | http | peer
    storage_class: str | None = None


class Storage(_Strict, frozen=True):
    limit: str | int | None = None      # quantity: the most this model may occupy under the root
    headroom: str | int = "10Gi"        # quantity: free space that must remain on the disk


class FanOut(_Strict, frozen=True):
    max_nodes_pulling: int = 4
    node_bytes_per_second: str | int | None = None    # quantity per second
    total_bytes_per_second: str | int | None = None


class Retry(_Strict, frozen=True):
    attempts: int = 6
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = 60.0


class EnvTarget(_Strict, frozen=True):
    name: str
    container: str | None = None     # every container when absent


class GatedWorkload(_Strict, frozen=True):
    kind: Literal["Deployment", "StatefulSet", "LeaderWorkerSet"]
    name: str
    namespace: str = "default"
    annotation: str | None = None    # pod-template annotation set to the version
    env: EnvTarget | None = None     # env var set to ROOT/<model>/<version>


class Readiness(_Strict, frozen=True):
    min_nodes: int | None = None     # N of M; all target nodes when absent
    max_mixed_seconds: float = 900.0  # replicas on two versions longer than this is a finding


class ModelCacheSpec(_Strict, frozen=True):
    version: str
    files: list[ModelFile]
    source: Source
    node_selector: dict[str, str] = {}
    root: str = DEFAULT_ROOT
    storage: Storage = Storage()
    fan_out: FanOut = FanOut()
    retry: Retry = Retry()
    workloads: list[GatedWorkload] = []
    readiness: Readiness = Readiness()


_Count = Annotated[int, msgspec.Meta(ge=0)]


class NodeStatus(msgspec.Struct, rename="camel", omit_defaults=True):
    """One node's entry under status.nodes, as the CRD's schema types it (unknown fields kept out)."""

    state: str | None = None
    version: str | None = None
    current: str | None = None
    bytes_done: _Count | None = None
    bytes_total: _Count | None = None
    free_bytes: _Count | None = None
    error: str | None = None
    updated_at: str | None = None


class Metadata(msgspec.Struct, rename="camel", omit_defaults=True):
    name: str = ""
    namespace: str | None = None
    resource_version: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


class ModelCache(msgspec.Struct, rename="camel", omit_defaults=True):
    api_version: str
    kind: str
    metadata: Metadata
    spec: ModelCacheSpec
    status: dict[str, Any] = {}

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def ref(self) -> str:
        return f"{KIND}/{self.metadata.name}"

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.spec.files)

    def version_dir(self, root: str | Path | None = None) -> Path:
        return Path(root or self.spec.root) / self.name / self.spec.version

    def headroom_bytes(self) -> int:
        return quantity_bytes(self.spec.storage.headroom, self, "spec.storage.headroom")

    def limit_bytes(self) -> int | None:
        return quantity_bytes(self.spec.storage.limit, self, "spec.storage.limit")

    def node_rate(self) -> float | None:
        """Bytes/s one node may pull: its own cap, and its share of the total cap."""
        fan = self.spec.fan_out
        node = quantity_bytes(fan.node_bytes_per_second, self, "spec.fanOut.nodeBytesPerSecond")
        total = quantity_bytes(fan.total_bytes_per_second, self, "spec.fanOut.totalBytesPerSecond")
        share = total / max(1, fan.max_nodes_pulling) if total else None
        rates = [r for r in (node, share) if r]
        return float(min(rates)) if rates else None


def quantity_bytes(value: str | int | None, cache: ModelCache | None, field: str) -> int | None:
    if value is None:
        return None
    try:
        amount = ceil_value(parse_quantity(value))
    except InputError as err:
        raise InputError(err.message, obj=cache.ref if cache else None, field=field) from None
    if amount < 0:
        raise InputError("must not be negative", obj=cache.ref if cache else None, field=field)
    return amount


_PATH_RE = re.compile(r" - at `\$\.?(.*)`$")


def decode_cache(body: Any, *, where: str | None = None) -> ModelCache:
    """A ModelCache from a parsed object; InputError naming the object and field otherwise."""
    if not isinstance(body, dict):
        raise InputError("expected a ModelCache object", where=where)
    name = (body.get("metadata") or {}).get("name") if isinstance(body.get("metadata"), dict) else None
    ref = f"{KIND}/{name or '<unnamed>'}"
    if body.get("kind") != KIND:
        raise InputError(f"kind is {body.get('kind')!r}, expected {KIND}", where=where, obj=ref, field="kind")
    if body.get("apiVersion") != API_VERSION:
        raise InputError(f"apiVersion is {body.get('apiVersion')!r}, expected {API_VERSION}", where=where, obj=ref,
                         field="apiVersion")
    try:
        cache = msgspec.convert(body, ModelCache)
    except msgspec.ValidationError as err:
        text = str(err)
        m = _PATH_RE.search(text)
        message = _PATH_RE.sub("", text).replace("`", "")
        message = message[0].lower() + message[1:] if message else "invalid value"
        field = m.group(1) if m else None
        unknown = re.search(r"(?:unknown|missing required) field (\S+)", message)
        if unknown:  # name the field itself, as kubectl's strict decoding does
            field = f"{field}.{unknown.group(1)}" if field else unknown.group(1)
        raise InputError(message, where=where, obj=ref, field=field) from None
    try:
        validate(cache)
        cache.status = {**cache.status, "nodes": status_nodes(cache)} if "nodes" in cache.status else cache.status
    except InputError as err:
        err.where = where
        raise
    return cache


def status_nodes(cache: ModelCache) -> dict[str, dict]:
    """status.nodes checked against the CRD's types (an object of objects; byte counts integers >= 0),
    as plain dicts; InputError naming the field otherwise. Only what the agents write is kept."""
    raw = cache.status.get("nodes")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        _fail(cache, "status.nodes", f"expected an object (node name -> entry), got {type(raw).__name__}")
    out = {}
    for name, entry in raw.items():
        try:
            out[str(name)] = msgspec.to_builtins(msgspec.convert(entry, NodeStatus))
        except msgspec.ValidationError as err:
            m = _PATH_RE.search(str(err))
            where = f".{m.group(1)}" if m and m.group(1) else ""
            message = _PATH_RE.sub("", str(err)).replace("`", "")
            _fail(cache, f"status.nodes.{name}{where}", message[0].lower() + message[1:] if message else "invalid")
    return out


def _fail(cache: ModelCache, field: str, message: str) -> None:
    raise InputError(message, obj=cache.ref, field=field)


def safe_relative_path(text: str) -> bool:
    """A manifest path stays below the version folder: relative, normalised, no `..`, no NUL."""
    if not text or "\x00" in text or "\\" in text or text.startswith("/"):
        return False
    norm = posixpath.normpath(text)
    return norm == text and norm not in (".", "..") and not norm.startswith("../") and ".." not in norm.split("/")


def validate(cache: ModelCache) -> None:
    """The checks a schema cannot express: names, paths, digests, sizes, source hosts, rules."""
    spec = cache.spec
    if not _NAME.match(cache.name):
        _fail(cache, "metadata.name", f"{cache.name!r} is not a DNS-1123 name (it names a folder on every node)")
    if not _VERSION_NAME.match(spec.version) or len(spec.version) > 63:
        _fail(cache, "spec.version", f"{spec.version!r} is not a revision name (letters, digits, - . _; <= 63)")
    if spec.version == "current":
        _fail(cache, "spec.version", "'current' is reserved for the pointer to the verified version")
    if not spec.files:
        _fail(cache, "spec.files", "the manifest lists no files")
    seen: set[str] = set()
    folders: set[str] = set()  # every parent folder of a listed file: linear in the manifest, not quadratic
    for i, f in enumerate(spec.files):
        if not safe_relative_path(f.path):
            _fail(cache, f"spec.files[{i}].path", f"{f.path!r} escapes the version folder (absolute, '..' or not "
                                                  "normalised)")
        parents = [f.path[:j] for j, ch in enumerate(f.path) if ch == "/"]
        if f.path in seen or f.path in folders or any(p in seen for p in parents):
            _fail(cache, f"spec.files[{i}].path", f"{f.path!r} is listed twice or is both a file and a folder")
        seen.add(f.path)
        folders.update(parents)
        if f.path.endswith(".partial") or f.path.split("/")[-1].startswith(".kubegpu"):
            _fail(cache, f"spec.files[{i}].path", f"{f.path!r} uses a name kubegpu reserves for its own files")
        if f.size < 0:
            _fail(cache, f"spec.files[{i}].size", f"size {f.size} is negative")
        if not _SHA256.match(f.sha256):
            _fail(cache, f"spec.files[{i}].sha256", f"{f.sha256!r} is not a sha256 digest (64 lowercase hex)")
    _validate_source(cache)
    if not spec.root.startswith("/"):
        _fail(cache, "spec.root", f"{spec.root!r} is not an absolute path")
    cache.headroom_bytes()
    cache.limit_bytes()
    cache.node_rate()
    if spec.fan_out.max_nodes_pulling < 1:
        _fail(cache, "spec.fanOut.maxNodesPulling", "must be at least 1")
    if spec.retry.attempts < 1 or not all(0 <= t < float("inf") for t in (spec.retry.backoff_seconds,
                                                                          spec.retry.max_backoff_seconds)):
        _fail(cache, "spec.retry", "attempts must be >= 1 and back-off times finite numbers >= 0")
    if not 0 <= spec.readiness.max_mixed_seconds < float("inf"):
        _fail(cache, "spec.readiness.maxMixedSeconds", "must be a finite number of seconds >= 0")
    if spec.readiness.min_nodes is not None and spec.readiness.min_nodes < 1:
        _fail(cache, "spec.readiness.minNodes", "must be at least 1 (leave it out for all target nodes)")
    for i, w in enumerate(spec.workloads):
        if not w.annotation and not w.env:
            _fail(cache, f"spec.workloads[{i}]", "name how pods are pointed at a version: annotation or env")


def _validate_source(cache: ModelCache) -> None:
    src = cache.spec.source
    given = [k for k in ("url", "s3", "path") if getattr(src, k)]
    if len(given) != 1:
        _fail(cache, "spec.source", "set exactly one of url, s3 or path")
    if src.url is not None:
        parts = urlsplit(src.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            _fail(cache, "spec.source.url", f"{src.url!r} is not an http(s) URL")
    if src.s3 is not None:
        parts = urlsplit(src.s3.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            _fail(cache, "spec.source.s3.endpoint", f"{src.s3.endpoint!r} is not an http(s) URL")
    if src.path is not None and not src.path.startswith("/"):
        _fail(cache, "spec.source.path", f"{src.path!r} is not an absolute path")


def base_url(cache: ModelCache) -> str | None:
    """The HTTP base URL files are fetched from (S3 as path-style `endpoint/bucket/prefix`)."""
    src = cache.spec.source
    if src.url:
        return src.url if src.url.endswith("/") else src.url + "/"
    if src.s3:
        prefix = src.s3.prefix.strip("/")
        return f"{src.s3.endpoint.rstrip('/')}/{src.s3.bucket}/" + (f"{prefix}/" if prefix else "")
    return None


def load_cache_file(path: str) -> ModelCache:
    """The one ModelCache in a YAML or JSON file (a List or multi-document stream must hold exactly one)."""
    bodies = [d if isinstance(d, dict) else msgspec.json.decode(bytes(d)) for d in read_snapshot(path).items]
    found = [b for b in bodies if isinstance(b, dict) and b.get("kind") == KIND]
    if len(found) != 1:
        raise InputError(f"expected exactly one {KIND}, found {len(found)}", where=path)
    return decode_cache(found[0], where=path)
