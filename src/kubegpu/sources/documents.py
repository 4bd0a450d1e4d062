"""Documents: raw v1 objects as a source delivered them, before decoding.

Raw bytes are kept so `kubegpu snapshot` can write back exactly what it read, field for field,
while the engines decode only the fields they use.
"""

from __future__ import annotations

import gc
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubegpu.errors import InputError
from kubegpu.model.cluster import ClusterState
from kubegpu.model.decode import RawDoc, decode_object

SNAPSHOT_INFO_KIND = "SnapshotInfo"
SNAPSHOT_INFO_API = "kubegpu.io/v1"


@dataclass
class Documents:
    """Raw objects with the file (or URL) each came from, and the cluster's version if known."""

    items: list[RawDoc] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    server_version: str | None = None
    source: str = ""
    captured_at: str | None = None

    def add(self, doc: RawDoc, origin: str) -> None:
        self.items.append(doc)
        self.origins.append(origin)

    def extend(self, other: "Documents") -> None:
        self.items.extend(other.items)
        self.origins.extend(other.origins)
        self.server_version = self.server_version or other.server_version
        self.captured_at = self.captured_at or other.captured_at


def snapshot_info(doc: RawDoc) -> dict[str, Any] | None:
    """The SnapshotInfo body when `doc` is one (cheap check on raw bytes first), else None."""
    body = doc if isinstance(doc, dict) else None
    if body is None:
        raw = bytes(doc)
        if SNAPSHOT_INFO_KIND.encode() not in raw[:400]:
            return None
        try:
            body = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            return None
    if isinstance(body, dict) and body.get("kind") == SNAPSHOT_INFO_KIND:
        return body
    return None


def snapshot_info_object(*, server_version: str | None, captured_at: str, source: str) -> dict[str, Any]:
    """The object kubegpu snapshots carry to record the cluster version and capture time."""
    info: dict[str, Any] = {"apiVersion": SNAPSHOT_INFO_API, "kind": SNAPSHOT_INFO_KIND,
                            "metadata": {"name": "snapshot"}, "capturedAt": captured_at, "source": source}
    if server_version:
        info["serverVersion"] = {"gitVersion": server_version}
    return info


@contextmanager
def paused_gc(*, freeze: bool = False):
    """Pause the cyclic GC while building many small acyclic objects.

    Decoding 50k pods allocates millions of objects; each allocation burst triggers a full
    collection that finds nothing. Pausing it makes the load 4-5x faster. `freeze`: the objects
    live until the process ends (a one-shot command), so they move to the permanent generation
    and no later collection walks them again (they are still freed by reference counting).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was_enabled:
            gc.enable()


def load_cluster(docs: Documents, *, one_shot: bool = False) -> ClusterState:
    """Decode every document (naming file, object and field on error) into a ClusterState.

    `one_shot`: the caller keeps this cluster until it exits (the CLI), see `paused_gc(freeze=)`."""
    with paused_gc(freeze=one_shot):
        return _load_cluster(docs)


def _identity(obj) -> tuple | None:
    """What makes two objects one in a cluster: the same kind, namespace and name."""
    name = obj.metadata.name
    return (obj.kind, obj.metadata.namespace or "", name) if name else None


def _load_cluster(docs: Documents) -> ClusterState:
    objects = []
    origin_of: dict[str, str] = {}
    seen: set = set()
    uids: set[str] = set()
    duplicates: list[tuple[str, str]] = []
    kept: list[int] = []
    source = docs.source
    version = docs.server_version
    captured = docs.captured_at
    for i, (doc, origin) in enumerate(zip(docs.items, docs.origins)):
        info = snapshot_info(doc)
        if info is not None:
            kept.append(i)
            sv = info.get("serverVersion")
            if isinstance(sv, dict) and isinstance(sv.get("gitVersion"), str):
                version = version or sv["gitVersion"]
            if isinstance(info.get("capturedAt"), str):
                captured = captured or info["capturedAt"]
            if isinstance(info.get("source"), str) and info["source"]:
                source = info["source"]  # a snapshot names the cluster it was taken from
            continue
        obj = decode_object(doc, where=origin)
        key = _identity(obj)
        uid = obj.metadata.uid
        if (key is not None and key in seen) or (uid and uid in uids):
            duplicates.append((obj.ref, origin))  # a cluster holds one object per kind/ns/name
            continue
        if key is not None:
            seen.add(key)
        if uid:
            uids.add(uid)
        kept.append(i)
        objects.append(obj)
        origin_of.setdefault(obj.ref, origin)
    if duplicates:
        ref, origin = duplicates[0]
        more = f" and {len(duplicates) - 1} more" if len(duplicates) > 1 else ""
        sys.stderr.write(f"warning: {len(duplicates)} duplicate object(s) counted once: {ref} "
                         f"(again in {origin}){more}\n")
        docs.items = [docs.items[i] for i in kept]
        docs.origins = [docs.origins[i] for i in kept]
    try:
        state = ClusterState(objects, server_version=version, source=source, captured_at=captured)
        state.origins = origin_of
        return state
    except InputError as err:
        # quantities are parsed while indexing; name the file the object came from
        if err.where is None and err.obj in origin_of:
            err.where = origin_of[err.obj]
        raise
