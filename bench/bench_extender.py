"""`kubegpu extender` over loopback HTTP at 5,000 nodes / 50,000 pods: latency, throughput, memory.

The extender runs as its own process (`kubegpu extender --snapshot DUMP`), exactly as deployed;
this script is the client. The dump is bench/synthetic_cluster.py's 5,000-node / 50,000-pod
cluster with a third of the running GPU pods turned CPU-only, so GPUs are free in realistic
holes (the stock dump is full, and nothing would be scored).

    PYTHONPATH=src python bench/bench_extender.py [--nodes 5000] [--pods 50000] [--calls 300]

Prints one table: p50/p99 per verb at 5,000 and 500 names (nodeCacheCapable), pods/s through
the kube-scheduler stand-in (tests/extender/standin.py; its own filters and scores included),
how often the stand-in bound the node the policy scored 10, the extender's peak RSS and the
time one generation takes to build (the staleness bound of anything the extender did not
assume itself). Targets: p50 <= 2 ms and p99 <= 5 ms at 5,000 names; p99 <= 1 ms at 500;
>= 100 pods/s; < 1 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import msgspec
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests" / "extender")]

from synthetic_cluster import synthetic_cluster  # noqa: E402


def dump_with_room(path: Path, nodes: int, pods: int, seed: int = 7) -> dict:
    """The synthetic cluster with every third running GPU pod made CPU-only (GPUs free in holes)."""
    data = synthetic_cluster(nodes=nodes, pods=pods, pending=1000, seed=seed)
    rng = random.Random(seed)
    for item in data["items"]:
        if item["kind"] != "Pod" or not item["spec"].get("nodeName"):
            continue
        res = item["spec"]["containers"][0]["resources"]
        if "nvidia.com/gpu" in res["limits"] and rng.random() < 1 / 3:
            res["requests"].pop("nvidia.com/gpu")
            res["limits"].pop("nvidia.com/gpu")
    path.write_text(json.dumps(data))
    return data


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_extender(dump: Path, port: int, policy: str, ledger: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", "extender", "--snapshot", str(dump),
                             "--port", str(port), "--policy", policy, "--ledger", str(ledger)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise SystemExit(f"extender exited: {proc.stderr.read().decode()}")
        time.sleep(0.5)
    raise SystemExit("extender did not become ready")


def timed(client: httpx.Client, url: str, body: bytes) -> float:
    t = time.perf_counter()
    r = client.post(url, content=body, headers={"Content-Type": "application/json"})
    dt = time.perf_counter() - t
    assert r.status_code == 200, r.text[:200]
    return dt


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1e3, q))


def rss_mb(pid: int) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+)", text).group(1)) / 1024


def latency(client, base, pods, names, calls) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"filter": [], "prioritize": []}
    for k in range(calls):
        pod = pods[k % len(pods)]
        body = msgspec.json.encode({"Pod": pod, "Nodes": None, "NodeNames": names})
        out["filter"].append(timed(client, f"{base}/filter", body))
        out["prioritize"].append(timed(client, f"{base}/prioritize", body))
    return out


def standin_run(data: dict, base: str, pods: list[dict], percentage: int) -> tuple[float, float]:
    """(pods/s, share of bindings on the node the extender scored 10) through the stand-in."""
    from standin import ExtenderConfig, HTTPExtender, StandIn

    from kubegpu.model.cluster import ClusterState
    from kubegpu.model.decode import decode_object
    from kubegpu.scheduling.snapshot import SchedulingSnapshot

    objs = [decode_object(i) for i in data["items"]]
    state = ClusterState(objs)
    node_docs = {i["metadata"]["name"]: i for i in data["items"] if i["kind"] == "Node"}
    with httpx.Client() as client:
        ext = HTTPExtender(ExtenderConfig(base, weight=10, managed_resources=["nvidia.com/gpu"]), client)
        standin = StandIn(SchedulingSnapshot(state), node_docs, [ext], percentage=percentage, seed=1)
        agree = bound = 0
        t = time.perf_counter()
        for doc in pods:
            attempt = standin.schedule(doc, decode_object(doc))
            if attempt.node is not None and attempt.extender_scores:
                bound += 1
                agree += attempt.extender_scores.get(attempt.node) == 10
        dt = time.perf_counter() - t
    return len(pods) / dt, (agree / bound if bound else float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50_000)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--policy", default="fgd")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "cluster.json"
        data = dump_with_room(dump, args.nodes, args.pods)
        node_names = [i["metadata"]["name"] for i in data["items"] if i["kind"] == "Node"]
        pending = [i for i in data["items"] if i["kind"] == "Pod" and not i["spec"].get("nodeName")]
        port = free_port()
        t0 = time.perf_counter()
        ledger = Path(tmp) / "decisions.ndjson"
        proc = start_extender(dump, port, args.policy, ledger)
        ready_s = time.perf_counter() - t0
        base = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client() as client:
                latency(client, base, pending[:20], node_names, 20)   # warm up
                big = latency(client, base, pending, node_names, args.calls)
                sample = random.Random(1).sample(node_names, min(500, len(node_names)))
                small = latency(client, base, pending, sample, args.calls)
                metrics = client.get(f"{base}/metrics").text
            build = float(re.search(r"^kubegpu_extender_build_seconds (\S+)", metrics, re.M).group(1))
            rate_all, agree_all = standin_run(data, base, pending[:200], 100)
            rate_def, agree_def = standin_run(data, base, pending[200:400], 0)
            rss = rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        # inside the server (the ledger's total_ms): what HTTP and the client add is the difference
        records = [json.loads(line) for line in ledger.read_text().splitlines()]
        inside = {}
        for name, start in (("big", 40), ("small", 40 + 2 * args.calls)):
            part = records[start:start + 2 * args.calls]
            for verb in ("filter", "prioritize"):
                inside[(name, verb)] = [r["timings"]["total_ms"] / 1e3 for r in part if r["mode"] == f"extender-{verb}"]
    n = len(node_names)
    rows = [
        (f"filter, {n} names: p50 / p99 ms", f"{pct(big['filter'], 50):.2f} / {pct(big['filter'], 99):.2f}", "<= 2 / 5"),
        (f"prioritize, {n} names: p50 / p99 ms",
         f"{pct(big['prioritize'], 50):.2f} / {pct(big['prioritize'], 99):.2f}", "<= 2 / 5"),
        ("filter, 500 names: p50 / p99 ms", f"{pct(small['filter'], 50):.2f} / {pct(small['filter'], 99):.2f}",
         "p99 <= 1"),
        ("prioritize, 500 names: p50 / p99 ms",
         f"{pct(small['prioritize'], 50):.2f} / {pct(small['prioritize'], 99):.2f}", "p99 <= 1"),
        (f"inside the server, filter / prioritize, {n} names: p50 ms",
         f"{pct(inside[('big', 'filter')], 50):.2f} / {pct(inside[('big', 'prioritize')], 50):.2f}", ""),
        ("inside the server, filter / prioritize, 500 names: p50 ms",
         f"{pct(inside[('small', 'filter')], 50):.2f} / {pct(inside[('small', 'prioritize')], 50):.2f}", ""),
        ("stand-in pods/s (percentageOfNodesToScore 100)", f"{rate_all:.0f}", ">= 100"),
        ("stand-in pods/s (adaptive: 500 of 5,000 sampled)", f"{rate_def:.0f}", ">= 100"),
        ("bound on the policy's node (100% / adaptive)", f"{agree_all:.1%} / {agree_def:.1%}", ""),
        ("extender peak RSS MB", f"{rss:.0f}", "< 1024"),
        ("start to ready s / one generation build s", f"{ready_s:.1f} / {build:.2f}", ""),
    ]
    width = max(len(r[0]) for r in rows)
    load = os.getloadavg()[0]
    print(f"kubegpu extender, {n} nodes, {args.pods} pods, policy {args.policy}, {args.calls} calls per row "
          f"({os.cpu_count()} CPUs, load average {load:.1f})")
    for name, value, target in rows:
        print(f"  {name:<{width}}  {value:>16}  {target}")


if __name__ == "__main__":
    main()
