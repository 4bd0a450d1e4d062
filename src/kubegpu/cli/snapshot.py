"""`kubegpu snapshot [--file FILE]`: everything kubegpu reads, as one v1 List, for offline use.

Items are written exactly as the source delivered them (the bytes a live server sent, or the
objects of a dump), after a first SnapshotInfo item that records the server version and the
capture time. The cluster is loaded (validated) before anything is written, and the file is
written through the one atomic writer, item by item, so a bad source or a full disk leaves
nothing behind; `.gz` compresses it; `.yaml`/`.yml` (or `-o yaml`) writes YAML.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from typing import Iterator

import click
import msgspec

from kubegpu.cli.options import file_option, format_for_file, output_option, read_documents, source_options
from kubegpu.cli.render import open_output, yaml_list_chunks
from kubegpu.sources.documents import Documents, snapshot_info, load_cluster, snapshot_info_object
from kubegpu.guards.bounded import path_text

_ENCODER = msgspec.json.Encoder()
_HEAD_JSON = b'{"apiVersion":"v1","kind":"List","metadata":{},"items":[\n'
_HEAD_YAML = b"apiVersion: v1\nkind: List\nmetadata: {}\nitems:\n"


def _items(docs: Documents, *, server_version: str | None, captured_at: str) -> Iterator[object]:
    """The SnapshotInfo item first, then every item as read (raw bytes stay raw).

    SnapshotInfo items of the sources are replaced by the one new first item (it keeps the source
    that an earlier snapshot recorded).
    """
    source = docs.source
    for doc in docs.items:
        info = snapshot_info(doc)
        if info is not None and isinstance(info.get("source"), str):
            source = info["source"]
    yield snapshot_info_object(server_version=server_version, captured_at=captured_at, source=source)
    for doc in docs.items:
        if snapshot_info(doc) is None:
            yield doc


def snapshot_chunks(docs: Documents, *, server_version: str | None, captured_at: str,
                    fmt: str = "json") -> Iterator[bytes]:
    """The List as chunks: JSON with one item per line (raw items copied byte for byte), or YAML."""
    items = _items(docs, server_version=server_version, captured_at=captured_at)
    if fmt == "yaml":
        yield _HEAD_YAML
        plain = (msgspec.json.decode(bytes(doc)) if isinstance(doc, msgspec.Raw) else doc for doc in items)
        yield from (chunk for chunk in yaml_list_chunks(plain) if chunk != b"[]\n")
        return
    yield _HEAD_JSON
    for i, doc in enumerate(items):
        body = bytes(doc) if isinstance(doc, msgspec.Raw) else _ENCODER.encode(doc)
        yield (b",\n" if i else b"") + body
    yield b"\n]}\n"


def _kind_counts(state) -> str:
    counts = Counter(obj.kind for obj in state.objects)
    top = ", ".join(f"{n} {kind}" for kind, n in counts.most_common(6))
    return f"{sum(counts.values())} objects ({top}{', ...' if len(counts) > 6 else ''})"


@click.command()
@source_options(namespaces=False, k8s_version=False)
@output_option(default=None, standard=("json", "yaml"), legacy_file=True)
@file_option("Where to write the List: FILE.json, FILE.yaml, FILE.json.gz (gzip); default stdout.")
def snapshot(source, output, file):
    """Capture everything kubegpu reads as one v1 List file.

    Read-only: on a live cluster it lists nodes, pods, events, workloads, PDBs, priority
    classes, storage, network policies, HPAs, ConfigMaps and the GPU-related CRDs that are
    installed (never Secrets). Any command reads the file back with --snapshot FILE.
    The format is -o json|yaml, else what the file name says (.yaml/.yml is YAML), else JSON.

    \b
    Examples:
      kubegpu snapshot --file cluster.json.gz             the current kubeconfig context
      kubegpu snapshot --context prod --file prod.yaml
      kubegpu snapshot --demo -o json > demo.json
    """
    fmt = format_for_file(output, file)
    docs = read_documents(source)
    state = load_cluster(docs)  # refuse to write a file that would not load back
    captured = state.captured_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open_output(file) as out:
        for chunk in snapshot_chunks(docs, server_version=state.server_version, captured_at=captured, fmt=fmt):
            out.write(chunk)
    if file and file != "-":
        version = f", Kubernetes {state.server_version}" if state.server_version else ""
        click.echo(f"wrote {path_text(file)}: {_kind_counts(state)} from {state.source or docs.source}{version}",
                   err=True)
