"""Where each object of an audit came from: a file and line for snapshots, a stable URI otherwise.

SARIF consumers (GitHub code scanning) need a physical location per result. For `--snapshot FILE`
that is the file (as given, relative paths stay relative to the working directory, which CI sets
to the repository root) and the line of the object's `metadata.name` when it can be found; for the
demo, a live cluster or stdin it is `k8s://<cluster>/<Kind>/<namespace>/<name>`, stable across runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgspec

from kubegpu.errors import InputError
from kubegpu.guards.bounded import read_bounded
from kubegpu.sources.documents import Documents
from kubegpu.sources.snapshot import MAX_BYTES

_TOKEN = re.compile(r'"?(kind|name)"?\s*:\s*"?([A-Za-z0-9][^"\s,}]*)"?')


@dataclass(frozen=True)
class Origin:
    uri: str
    line: int | None = None


class _Meta(msgspec.Struct):
    name: Any = None
    namespace: Any = None


class _Head(msgspec.Struct):
    kind: Any = None
    metadata: _Meta = msgspec.field(default_factory=_Meta)


_HEAD = msgspec.json.Decoder(_Head)


def _ref(doc: Any) -> str | None:
    if isinstance(doc, dict):
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        kind, name, ns = doc.get("kind"), meta.get("name"), meta.get("namespace")
    else:
        try:
            head = _HEAD.decode(doc)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        kind, name, ns = head.kind, head.metadata.name, head.metadata.namespace
    if not isinstance(kind, str) or not isinstance(name, str):
        return None
    return f"{kind}/{ns}/{name}" if isinstance(ns, str) and ns else f"{kind}/{name}"


def cluster_label(source: str) -> str:
    """'demo:pitfalls' -> 'demo-pitfalls', 'live:prod' -> 'prod': the authority of k8s:// URIs."""
    kind, _, rest = source.partition(":")
    label = f"demo-{rest}" if kind == "demo" else (rest if kind == "live" and rest else kind or "cluster")
    return re.sub(r"[^A-Za-z0-9.-]+", "-", label).strip("-") or "cluster"


def object_uri(cluster: str, ref: str) -> str:
    """k8s://<cluster>/<Kind>/<ns>/<name> (a stable identity for an object that is not in a file)."""
    return f"k8s://{cluster}/" + "/".join(quote(part, safe="") for part in ref.split("/"))


def file_uri(path: str) -> str:
    """A relative path stays a relative URI reference (forward slashes); an absolute one is file://."""
    p = Path(path)
    return p.as_uri() if p.is_absolute() else quote(p.as_posix(), safe="/")


def _name_lines(path: Path) -> dict[tuple[str, str], list[int]]:
    """(kind, name) -> 1-based lines of each object's metadata.name, in file order.

    Works on YAML streams, `kind: List` YAML, pretty JSON and one-object-per-line JSON without a
    full parse: an object's `kind` is the outermost one (not a *List), its name the first `name`
    after it and deeper; ownerReferences and containers are deeper still and never counted."""
    out: dict[tuple[str, str], list[int]] = {}
    if path.suffix == ".gz" or not path.is_file():
        return out
    try:  # the snapshot was read once already; bounded all the same
        text = read_bounded(path, max_bytes=MAX_BYTES).decode("utf-8")
    except (InputError, UnicodeDecodeError):
        return out
    object_indent: int | None = None
    kind: str | None = None
    kind_indent = 0
    for number, line in enumerate(text.splitlines(), start=1):
        tokens = [(m.group(1), m.group(2), m.start()) for m in _TOKEN.finditer(line)]
        if not tokens:
            continue
        if len(tokens) > 1 and line.lstrip(" -").startswith("{"):  # a whole object on one line
            kinds = [i for i, (k, v, _) in enumerate(tokens) if k == "kind" and not v.endswith("List")]
            if kinds:
                name = next((v for k, v, _ in tokens[kinds[0] + 1:] if k == "name"), None)
                if name:
                    out.setdefault((tokens[kinds[0]][1], name), []).append(number)
            continue
        for key, value, column in tokens:  # the column of the key, so flow mappings nest too
            if key == "kind" and not value.endswith("List"):
                if object_indent is None:
                    object_indent = column
                if column == object_indent:
                    kind, kind_indent = value, column
            elif key == "name" and kind is not None and column > kind_indent:
                out.setdefault((kind, value), []).append(number)
                kind = None
    return out


def object_origins(docs: Documents) -> dict[str, Origin]:
    """Object ref ('Kind/ns/name') -> its Origin, for every document of a source."""
    cluster = cluster_label(docs.source)
    files: dict[str, dict[tuple[str, str], list[int]]] = {}
    used: dict[tuple[str, str, str], int] = {}
    out: dict[str, Origin] = {}
    for doc, where in zip(docs.items, docs.origins):
        ref = _ref(doc)
        if ref is None or ref in out:
            continue
        is_file = docs.source.startswith("snapshot:") and where != "-" and Path(where).exists()
        if not is_file:
            out[ref] = Origin(uri=object_uri(cluster, ref))
            continue
        if where not in files:  # each file is scanned once (setdefault would rescan it for every object)
            files[where] = _name_lines(Path(where))
        lines = files[where]
        kind, name = ref.split("/")[0], ref.split("/")[-1]
        key = (where, kind, name)
        seen = used.get(key, 0)
        candidates = lines.get((kind, name), [])
        used[key] = seen + 1
        out[ref] = Origin(uri=file_uri(where), line=candidates[seen] if seen < len(candidates) else None)
    return out


def fallback_origin(docs: Documents) -> Origin:
    """For findings about no single object (Cluster/cluster): the first snapshot file, else the cluster."""
    if docs.source.startswith("snapshot:"):
        for where in docs.origins:
            if where != "-" and Path(where).exists():
                return Origin(uri=file_uri(where), line=None)
    return Origin(uri=f"k8s://{cluster_label(docs.source)}/")
