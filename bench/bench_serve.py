"""`kubegpu serve` under load, on loopback only, as a user runs it (a subprocess).

    PYTHONPATH=src python3 bench/bench_serve.py                 # both parts
    PYTHONPATH=src python3 bench/bench_serve.py --skip-large    # the demo load test only

1. The demo: an open-loop generator sends `--rate` requests/s (default 500), alternating
   /metrics and /api/frag, for `--seconds` (default 10). Latency is measured from each request's
   scheduled send time (no coordinated omission); the table shows p50/p99/max and errors.
   Target: p99 < 200 ms.
2. A 5,000-node / 50,000-pod snapshot (bench/synthetic_cluster.py): time until /readyz, then
   /metrics latency (first scrape and the median of 20 more), the exposition size, and the
   server's peak RSS (VmHWM). Targets: /metrics < 1 s, memory < 1 GB.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

SRC = str(Path(__file__).resolve().parents[1] / "src")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(*source: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", "serve", *source, "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


def wait_ready(proc: subprocess.Popen, base: str, timeout: float) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                return time.perf_counter() - start
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit("server not ready in time")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> int:
    """One keep-alive HTTP/1.1 GET on an open connection; returns the status code."""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = next(int(line.split(b":")[1]) for line in lines if line.lower().startswith(b"content-length:"))
    await reader.readexactly(length)
    return int(lines[0].split()[1])


async def open_loop(base: str, rate: float, seconds: float, connections: int = 32
                    ) -> tuple[list[float], int, float]:
    """Send `rate` requests/s on a pool of keep-alive connections (a light client: raw asyncio
    streams, so the generator does not compete with the server for the CPU more than it must)."""
    host, port = base.removeprefix("http://").split(":")
    paths = ["/metrics", "/api/frag"]
    pool: asyncio.Queue = asyncio.Queue()
    for _ in range(connections):
        pool.put_nowait(await asyncio.open_connection(host, int(port)))
    latencies: list[float] = []
    errors = 0
    total = int(rate * seconds)
    start = time.perf_counter()

    async def one(i: int) -> None:
        nonlocal errors
        scheduled = start + i / rate
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        conn = await pool.get()
        try:
            if await _get(*conn, paths[i % 2]) != 200:
                errors += 1
        except (OSError, asyncio.IncompleteReadError, ValueError):
            errors += 1
            conn = await asyncio.open_connection(host, int(port))
        pool.put_nowait(conn)
        latencies.append(time.perf_counter() - scheduled)

    await asyncio.gather(*(one(i) for i in range(total)))
    elapsed = time.perf_counter() - start
    while not pool.empty():
        pool.get_nowait()[1].close()
    return latencies, errors, elapsed


def bench_demo(rate: float, seconds: float) -> list[tuple[str, str]]:
    proc, base = start_server("--demo")
    try:
        wait_ready(proc, base, 60)
        for path in ("/metrics", "/api/frag"):   # warm both (first call serialises once per cluster state)
            httpx.get(base + path, timeout=10)
        latencies, errors, elapsed = asyncio.run(open_loop(base, rate, seconds))
        rss = peak_rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    ms = [x * 1000 for x in latencies]
    return [("demo: requests sent", f"{len(ms)} in {elapsed:.1f} s ({len(ms) / elapsed:.0f}/s, target {rate:.0f}/s)"),
            ("demo: errors", str(errors)),
            ("demo: latency p50 / p99 / max", f"{pct(ms, .5):.1f} / {pct(ms, .99):.1f} / {max(ms):.1f} ms "
                                              "(target p99 < 200 ms)"),
            ("demo: server peak RSS", f"{rss:.0f} MB")]


def bench_large(nodes: int, pods: int, pending: int) -> list[tuple[str, str]]:
    sys.path.insert(0, str(Path(__file__).parent))
    from synthetic_cluster import write_synthetic

    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "cluster.json"
        write_synthetic(snap, nodes=nodes, pods=pods, pending=pending)
        proc, base = start_server("--snapshot", str(snap))
        try:
            ready = wait_ready(proc, base, 600)
            t0 = time.perf_counter()
            first = httpx.get(base + "/metrics", timeout=60)
            first_s = time.perf_counter() - t0
            steady = []
            for _ in range(20):
                t0 = time.perf_counter()
                httpx.get(base + "/metrics", timeout=60)
                steady.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            page = httpx.get(base + "/", timeout=60)
            page_s = time.perf_counter() - t0
            rss = peak_rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    series = sum(1 for line in first.text.splitlines() if line and not line.startswith("#"))
    return [(f"{nodes:,} nodes: load + all views until /readyz", f"{ready:.1f} s"),
            (f"{nodes:,} nodes: /metrics first / median of 20", f"{first_s * 1000:.0f} / "
                                                               f"{statistics.median(steady) * 1000:.0f} ms "
                                                               "(target < 1 s)"),
            (f"{nodes:,} nodes: exposition", f"{len(first.content) / 1e6:.1f} MB, {series:,} samples"),
            (f"{nodes:,} nodes: overview page (pool-aggregated map)", f"{page_s * 1000:.0f} ms, "
                                                                     f"{len(page.content) / 1e3:.0f} kB"),
            (f"{nodes:,} nodes: server peak RSS", f"{rss:.0f} MB (target < 1 GB)")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=500)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50_000)
    ap.add_argument("--pending", type=int, default=1000)
    ap.add_argument("--skip-large", action="store_true")
    a = ap.parse_args()
    rows = bench_demo(a.rate, a.seconds)
    if not a.skip_large:
        rows += bench_large(a.nodes, a.pods, a.pending)
    width = max(len(k) for k, _ in rows)
    print(f"{'measure'.ljust(width)}  result")
    for k, v in rows:
        print(f"{k.ljust(width)}  {v}")


if __name__ == "__main__":
    main()
