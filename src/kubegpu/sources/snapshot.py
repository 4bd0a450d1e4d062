"""Snapshots: `kubectl get ... -o json|yaml` dumps, `kubegpu snapshot` files, directories of them.

Accepted: a `kind: List` (or any `*List`) of v1 objects, a single object, a JSON array of
objects, a multi-document YAML stream, gzip of any of these, or a directory (read in name
order, recursively). Unknown kinds are kept and ignored. Nothing here touches a cluster.
"""

from __future__ import annotations

import gzip
import sys
import zlib
from pathlib import Path
from typing import Any

import msgspec

from kubegpu.errors import InputError
from kubegpu.sources.documents import Documents, paused_gc
from kubegpu.sources.safe_yaml import load_yaml_documents

MAX_BYTES = 2 * 1024**3  # a 5,000-node / 50,000-pod dump is ~300 MB; beyond 2 GiB is a mistake
SNAPSHOT_SUFFIXES = (".json", ".yaml", ".yml", ".json.gz", ".yaml.gz", ".yml.gz", ".gz")


class _Top(msgspec.Struct):
    kind: Any = None
    items: msgspec.Raw = msgspec.Raw(b"null")


_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])


def _read_bytes(path: Path, where: str) -> bytes:
    try:
        if str(path) == "-":
            data = sys.stdin.buffer.read(MAX_BYTES + 1)
        else:
            with open(path, "rb") as fh:
                data = fh.read(MAX_BYTES + 1)
    except IsADirectoryError:
        raise InputError("is a directory", where=where) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", where=where) from None
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, where)
    if len(data) > MAX_BYTES:
        raise InputError(f"larger than {_size(MAX_BYTES)}; split the dump by namespace or kind", where=where)
    return data


def _size(n: int) -> str:
    return f"{n / 1024**3:g} GiB" if n >= 1024**3 else f"{n / 1024**2:g} MiB" if n >= 1024**2 else f"{n} bytes"


def _gunzip(data: bytes, where: str) -> bytes:
    try:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out = d.decompress(data, MAX_BYTES + 1)
        if d.unconsumed_tail:
            raise InputError(f"decompresses to more than {_size(MAX_BYTES)}", where=where)
        return out
    except (zlib.error, gzip.BadGzipFile, EOFError) as err:
        raise InputError(f"corrupt gzip data: {err}", where=where) from None


def _is_list_kind(kind: Any) -> bool:
    return isinstance(kind, str) and kind.endswith("List")


def _add_parsed(doc: Any, docs: Documents, where: str, label: str) -> None:
    """Add one parsed YAML/JSON value: a List, a single object, or an array of objects."""
    if doc is None:
        return
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            _add_parsed(item, docs, where, f"{label}[{i}]")
        return
    if not isinstance(doc, dict):
        raise InputError(f"expected a Kubernetes object or List, got {type(doc).__name__}", where=where)
    if _is_list_kind(doc.get("kind")) and "items" in doc:
        items = doc.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            raise InputError("expected a list", where=where, obj=str(doc.get("kind")), field="items")
        for item in items:
            _add_parsed(item, docs, where, label)
        return
    docs.add(doc, where)


def _parse_json(data: bytes, docs: Documents, where: str) -> None:
    try:
        top = msgspec.json.decode(data, type=_Top)
    except msgspec.ValidationError:
        top = None  # a JSON array (or scalar) at the top level
    except msgspec.DecodeError as err:
        raise InputError(f"malformed JSON: {err}", where=where) from None
    if top is not None and _is_list_kind(top.kind) and bytes(memoryview(top.items)[:1]) == b"[":
        # fast path for big dumps: keep each item raw, decode it later against its kind's struct
        for raw in _ITEMS.decode(top.items):
            if bytes(memoryview(raw)[:1]) == b"{":
                docs.add(raw, where)
            else:
                raise InputError("List item is not an object", where=where, field="items")
        return
    try:
        parsed = msgspec.json.decode(data)
    except msgspec.DecodeError as err:
        raise InputError(f"malformed JSON: {err}", where=where) from None
    _add_parsed(parsed, docs, where, "")


def read_snapshot_file(path: Path, docs: Documents) -> None:
    """Parse one file (JSON, YAML, gzip of either) into `docs`."""
    where = str(path)
    data = _read_bytes(path, where)
    text = data.lstrip()
    if not text:
        raise InputError("empty file: expected a Kubernetes object or List", where=where)
    if text[:1] in (b"{", b"["):
        with paused_gc():
            _parse_json(data, docs, where)
    else:
        try:
            decoded = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InputError(f"not UTF-8 text (byte {err.start}); expected JSON or YAML", where=where) from None
        parsed = load_yaml_documents(decoded, where=where)
        if not any(d is not None for d in parsed):
            raise InputError("no objects in this YAML stream", where=where)
        for doc in parsed:
            _add_parsed(doc, docs, where, "")


def read_snapshot(path: str | Path) -> Documents:
    """Read a snapshot file, stdin ("-") or a directory of snapshot files."""
    p = Path(path)
    docs = Documents(source=f"snapshot:{path}")
    if str(path) != "-" and p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(SNAPSHOT_SUFFIXES))
        if not files:
            raise InputError("directory has no .json/.yaml/.yml(.gz) files", where=str(path))
        for f in files:
            read_snapshot_file(f, docs)
        return docs
    if str(path) != "-" and not p.exists():
        raise InputError("no such file or directory", where=str(path))
    read_snapshot_file(p, docs)
    return docs
