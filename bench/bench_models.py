"""Model-weight throughput on this machine: local-disk copy of a multi-GB file, and `kubegpu models pull`
over loopback HTTP (ranged GETs, sha256 of every byte, fsync, atomic switch), next to the seed's figures.

    PYTHONPATH=src python3 bench/bench_models.py               # 2 GiB file, in a temp folder on the disk
    PYTHONPATH=src python3 bench/bench_models.py --size-gib 1 --dir /mnt/nvme

The pull runs as a user runs it: `kubegpu models pull --cache FILE --root DIR` in a subprocess,
timed end to end (interpreter start-up included), against a `python3 -m http.server` process on
127.0.0.1. Every file written is deleted at the end. Page caches are dropped before each read when
the machine allows it (root, /proc/sys/vm/drop_caches writable); the table says whether they were.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

SEED = {"NFS (seed)": 200e6, "local NVMe (seed)": 3e9}
BLOCK = 16 << 20


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
        return True
    except OSError:
        return False


def write_file(path: Path, size: int) -> str:
    h = hashlib.sha256()
    block = os.urandom(BLOCK)
    with open(path, "wb") as fh:
        left = size
        while left > 0:
            piece = block[:min(BLOCK, left)]
            fh.write(piece)
            h.update(piece)
            left -= len(piece)
        os.fsync(fh.fileno())
    return h.hexdigest()


def timed_copy(src: Path, dst: Path) -> float:
    start = time.perf_counter()
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout, BLOCK)
        fout.flush()
        os.fsync(fout.fileno())
    return time.perf_counter() - start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed_pull(folder: Path, name: str, size: int, digest: str) -> float:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        cache = {"apiVersion": "kubegpu.io/v1alpha1", "kind": "ModelCache", "metadata": {"name": "bench"},
                 "spec": {"version": "v1", "files": [{"path": name, "size": size, "sha256": digest}],
                          "source": {"url": f"http://127.0.0.1:{port}/"}, "storage": {"headroom": "1Gi"}}}
        cache_file = folder / "cache.yaml"
        cache_file.write_text(yaml.safe_dump(cache))
        root = folder / "root"
        root.mkdir()
        drop_caches()
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "models", "pull", "--cache",
                               str(cache_file), "--root", str(root)], capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"pull failed: {done.stderr.strip()}")
        return elapsed
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-gib", type=float, default=2.0)
    ap.add_argument("--dir", default=None, help="folder on the disk to measure (default: a temp folder)")
    args = ap.parse_args()
    size = int(args.size_gib * 2**30)
    folder = Path(tempfile.mkdtemp(prefix="kubegpu-bench-models.", dir=args.dir))
    try:
        src = folder / "weights.bin"
        start = time.perf_counter()
        digest = write_file(src, size)
        write_s = time.perf_counter() - start
        dropped = drop_caches()
        copy_s = timed_copy(src, folder / "copy.bin")
        (folder / "copy.bin").unlink()
        pull_s = timed_pull(folder, "weights.bin", size, digest)
        rows = [(f"write {args.size_gib:g} GiB (+sha256, fsync)", size / write_s),
                (f"local-disk copy {args.size_gib:g} GiB (fsync)", size / copy_s),
                (f"`models pull` over loopback HTTP {args.size_gib:g} GiB (sha256, fsync, switch)", size / pull_s)]
        rows += list(SEED.items())
        print(f"{'measurement':<72} {'MB/s':>8} {'14 GB takes':>12}")
        for label, rate in rows:
            print(f"{label:<72} {rate / 1e6:>8.0f} {14e9 / rate:>10.1f} s")
        print(f"page cache dropped before reads: {'yes' if dropped else 'no (not permitted here)'}; "
              f"{os.cpu_count()} CPUs")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
