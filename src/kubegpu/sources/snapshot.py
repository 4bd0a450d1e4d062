"""Snapshots: `kubectl get ... -o json|yaml` dumps, `kubegpu snapshot` files, directories of them.

Accepted: a `kind: List` (or any `*List`) of v1 objects, a single object, a JSON array of
objects, a multi-document YAML stream, gzip of any of these, or a directory (read in name
order, recursively). Unknown kinds are kept and ignored. Nothing here touches a cluster.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

import msgspec

from kubegpu.errors import InputError
from kubegpu.guards.bounded import path_text, read_bounded, size_text
from kubegpu.sources.documents import Documents, paused_gc
from kubegpu.guards.safe_yaml import load_yaml_documents

MAX_BYTES = 2 * 1024**3  # a 5,000-node / 50,000-pod dump is ~300 MB; beyond 2 GiB is a mistake
SNAPSHOT_SUFFIXES = (".json", ".yaml", ".yml", ".json.gz", ".yaml.gz", ".yml.gz", ".gz")


class _Top(msgspec.Struct):
    kind: Any = None
    items: msgspec.Raw = msgspec.Raw(b"null")


_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])


def _read_bytes(path: Path, where: str) -> bytes:
    data = read_bounded(path, where=where, max_bytes=MAX_BYTES)
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, where)
    return data


_size = size_text


def _gunzip(data: bytes, where: str) -> bytes:
    """Every member of a gzip file (as `gzip -d` reads them), refusing one that is cut short."""
    out: list[bytes] = []
    total = 0
    rest = data
    try:
        while rest:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            chunk = d.decompress(rest, MAX_BYTES + 1 - total)
            if d.unconsumed_tail:
                raise InputError(f"decompresses to more than {_size(MAX_BYTES)}", where=where)
            if not d.eof:
                raise InputError("gzip data is cut short (truncated file?)", where=where)
            out.append(chunk)
            total += len(chunk)
            rest = d.unused_data
            if rest and rest[:2] != b"\x1f\x8b":
                if rest.strip(b"\x00"):  # zero padding after the last member is allowed, as gzip -d does
                    raise InputError("trailing data after the gzip stream", where=where)
                break
    except zlib.error as err:
        raise InputError(f"corrupt gzip data: {err}", where=where) from None
    return b"".join(out)


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
    except RecursionError:
        raise InputError("JSON nested too deeply to read", where=where) from None
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
    except RecursionError:
        raise InputError("JSON nested too deeply to read", where=where) from None
    _add_parsed(parsed, docs, where, "")


def read_snapshot_file(path: Path, docs: Documents) -> None:
    """Parse one file (JSON, YAML, gzip of either) into `docs`."""
    where = path_text(path)  # the file's label in errors and reports (undecodable bytes escaped)
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


def _snapshot_files(folder: Path) -> list[Path]:
    """Snapshot files under `folder`, in name order; a folder that cannot be read is an error, not a skip."""

    def fail(err: OSError) -> None:
        raise InputError(f"cannot read folder: {err.strerror or err}", where=path_text(err.filename or folder))

    files = []
    for root, dirs, names in os.walk(folder, onerror=fail):
        dirs.sort()
        files.extend(Path(root) / n for n in names if n.endswith(SNAPSHOT_SUFFIXES))
    return sorted(f for f in files if f.is_file())


def read_snapshot(path: str | Path) -> Documents:
    """Read a snapshot file, stdin ("-") or a directory of snapshot files."""
    p = Path(path)
    docs = Documents(source=f"snapshot:{path_text(path)}")
    if str(path) != "-" and p.is_dir():
        files = _snapshot_files(p)
        if not files:
            raise InputError("directory has no .json/.yaml/.yml(.gz) files", where=path_text(path))
        for f in files:
            read_snapshot_file(f, docs)
        return docs
    if str(path) != "-" and not p.exists():
        raise InputError("no such file or directory", where=path_text(path))
    read_snapshot_file(p, docs)
    return docs
