"""`kubegpu snapshot -o FILE`: everything kubegpu reads, as one v1 List, for offline use.

Items are written exactly as the source delivered them (the bytes a live server sent, or the
objects of a dump), after a first SnapshotInfo item that records the server version and the
capture time. The file is validated before it is written, and written atomically, so a bad
source leaves nothing behind; `.gz` compresses it; `-o -` writes to stdout.
"""

from __future__ import annotations

import gzip
import sys
from collections import Counter
from datetime import datetime, timezone

import click
import msgspec

from kubegpu.cli.options import read_documents, source_options
from kubegpu.cli.render import write_atomic
from kubegpu.errors import UsageError
from kubegpu.sources.documents import Documents, snapshot_info, load_cluster, snapshot_info_object

_ENCODER = msgspec.json.Encoder()


def snapshot_bytes(docs: Documents, *, server_version: str | None, captured_at: str) -> bytes:
    """One `{"apiVersion": "v1", "kind": "List", "items": [...]}`, one item per line.

    Raw items are copied byte for byte; SnapshotInfo items of the sources are replaced by one
    new first item (it keeps the source that an earlier snapshot recorded).
    """
    source = docs.source
    items: list[bytes] = []
    for doc in docs.items:
        info = snapshot_info(doc)
        if info is not None:
            source = info.get("source") if isinstance(info.get("source"), str) else source
            continue
        items.append(bytes(doc) if isinstance(doc, msgspec.Raw) else _ENCODER.encode(doc))
    info_item = snapshot_info_object(server_version=server_version, captured_at=captured_at, source=source)
    lines = [_ENCODER.encode(info_item), *items]
    return b'{"apiVersion":"v1","kind":"List","metadata":{},"items":[\n' + b",\n".join(lines) + b"\n]}\n"


def _kind_counts(state) -> str:
    counts = Counter(obj.kind for obj in state.objects)
    top = ", ".join(f"{n} {kind}" for kind, n in counts.most_common(6))
    return f"{sum(counts.values())} objects ({top}{', ...' if len(counts) > 6 else ''})"


@click.command()
@source_options
@click.option("-o", "--output", "output_path", required=True, metavar="FILE",
              help="Where to write the List: FILE.json, FILE.json.gz (gzip), or '-' for stdout.")
def snapshot(source, output_path):
    """Capture everything kubegpu reads as one v1 List file.

    Read-only: on a live cluster it lists nodes, pods, events, workloads, PDBs, priority
    classes, storage, network policies, HPAs, ConfigMaps and the GPU-related CRDs that are
    installed (never Secrets). Any command reads the file back with --snapshot FILE.

    \b
    Examples:
      kubegpu snapshot -o cluster.json.gz                 the current kubeconfig context
      kubegpu snapshot --context prod -o prod.json
      kubegpu snapshot --demo -o demo.json
    """
    if source.namespace:
        raise UsageError("snapshot captures the whole cluster; -n/--namespace does not apply")
    if source.k8s_version:
        raise UsageError("snapshot records the cluster's own version; --k8s-version does not apply")
    docs = read_documents(source)
    state = load_cluster(docs)  # refuse to write a file that would not load back
    captured = state.captured_at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    data = snapshot_bytes(docs, server_version=state.server_version, captured_at=captured)
    if output_path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    if output_path.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    write_atomic(output_path, data)
    version = f", Kubernetes {state.server_version}" if state.server_version else ""
    click.echo(f"wrote {output_path}: {_kind_counts(state)} from {state.source or docs.source}{version}", err=True)
