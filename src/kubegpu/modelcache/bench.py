"""`kubegpu models bench`: measure this node's throughputs for `kubegpu models plan --figures`.

local-nvme: write a file of `size` bytes under the root with fsync, then read it back (the
figure is the slower of the two; the read may be served by the page cache, which the output
says). The source path: a real pull of a ModelCache into a scratch root under the root
(ranged HTTP or the shared folder, sha256 included), then removed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from kubegpu.modelcache.plan import LOCAL, source_path
from kubegpu.modelcache.pull import pull
from kubegpu.modelcache.spec import ModelCache

BLOCK = 8 << 20


def local_disk(root: Path, size: int) -> dict[str, float]:
    """Bytes/s writing (with fsync) and reading back one `size`-byte file under `root`."""
    block = os.urandom(min(BLOCK, size)) if size else b""
    fd, name = tempfile.mkstemp(prefix=".kubegpu-bench.", dir=root)
    try:
        start = time.perf_counter()
        with os.fdopen(fd, "wb") as fh:
            left = size
            while left > 0:
                left -= fh.write(block[:left])
            fh.flush()
            os.fsync(fh.fileno())
        write_s = time.perf_counter() - start
        start = time.perf_counter()
        with open(name, "rb") as fh:
            while fh.read(BLOCK):
                pass
        read_s = time.perf_counter() - start
    finally:
        os.unlink(name)
    return {"write": size / write_s if write_s else 0.0, "read": size / read_s if read_s else 0.0}


def source(cache: ModelCache, root: Path) -> float:
    """Bytes/s of a real, verified pull of the cache into a scratch root (removed afterwards)."""
    scratch = Path(tempfile.mkdtemp(prefix=".kubegpu-bench-pull.", dir=root))
    try:
        start = time.perf_counter()
        result = pull(cache, scratch, in_use=set())
        return result.bytes_fetched / (time.perf_counter() - start)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure(root: Path, size: int, cache: ModelCache | None = None) -> dict:
    disk = local_disk(root, size)
    figures = {LOCAL: min(disk["write"], disk["read"])}
    out = {"root": str(root), "size_bytes": size, "local_write_bytes_per_second": round(disk["write"]),
           "local_read_bytes_per_second": round(disk["read"]), "read_may_be_page_cache": True}
    if cache is not None:
        figures[source_path(cache)] = source(cache, root)
        out["source"] = {"model": cache.name, "version": cache.spec.version, "path": source_path(cache),
                         "bytes": cache.total_bytes}
    out["throughputs"] = {k: round(v) for k, v in figures.items()}
    return out
