"""`kubegpu extender` over loopback HTTP at 5,000 nodes / 50,000 pods: latency, throughput, memory.

The extender runs as its own process (`kubegpu extender --snapshot DUMP`), exactly as deployed;
this script is the client. The dump is bench/synthetic_cluster.py's 5,000-node / 50,000-pod
cluster with a third of the running GPU pods turned CPU-only, so GPUs are free in realistic
holes (the stock dump is full, and nothing would be scored).

    PYTHONPATH=src python bench/bench_extender.py [--nodes 5000] [--pods 50000] [--calls 300]

Prints one table: p50/p99 per verb at 5,000 and 500 names (nodeCacheCapable; a lean keep-alive
client, as kube-scheduler's Go client is, and httpx for comparison), the CPU the extender process
spends per call (HTTP parsing, the verb, the ledger: what a call costs when it gets a CPU at
once; on a loaded machine the wall clock adds the wait for one), pods/s through
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


class Response:
    def __init__(self, status_code: int, content: bytes) -> None:
        self.status_code, self.content = status_code, content

    @property
    def text(self) -> str:
        return self.content.decode(errors="replace")


class KeepAliveClient:
    """A lean HTTP/1.1 client on one persistent connection, as Go's net/http is to kube-scheduler:
    one write per request, Content-Length bodies, no per-request parsing beyond the status line and
    headers. httpx (pure-Python h11) spends more CPU per 150 KB reply than the extender does
    answering it; the httpx rows of the table show that difference."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.where = None

    def _connect(self, host: str, port: int) -> socket.socket:
        if self.sock is None or self.where != (host, port):
            self.sock = socket.create_connection((host, port))
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.where = (host, port)
        return self.sock

    def post(self, url: str, content: bytes, headers=None, timeout=None) -> Response:
        host, _, rest = url.removeprefix("http://").partition("/")
        name, _, port = host.partition(":")
        sock = self._connect(name, int(port or 80))
        sock.sendall(b"POST /%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (rest.encode(), host.encode(), len(content), content))
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(1 << 18)
            if not chunk:
                raise ConnectionError("server closed the connection")
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = next(int(v) for k, _, v in (ln.partition(b":") for ln in lines[1:]) if k.lower() == b"content-length")
        parts = [body]
        got = len(body)
        while got < length:
            chunk = sock.recv(max(length - got, 1 << 16))
            if not chunk:
                raise ConnectionError("server closed the connection")
            parts.append(chunk)
            got += len(chunk)
        return Response(int(lines[0].split()[1]), b"".join(parts))

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


def timed(client, url: str, body: bytes) -> float:
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def latency(client, base, pods, names, calls) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"filter": [], "prioritize": []}
    for k in range(calls):
        pod = pods[k % len(pods)]
        body = msgspec.json.encode({"Pod": pod, "Nodes": None, "NodeNames": names})
        out["filter"].append(timed(client, f"{base}/filter", body))
        out["prioritize"].append(timed(client, f"{base}/prioritize", body))
    return out


class TimedClient(KeepAliveClient):
    """The keep-alive client, adding up the wall time spent in calls."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0

    def post(self, url, content, headers=None, timeout=None):
        t = time.perf_counter()
        try:
            return super().post(url, content, headers, timeout)
        finally:
            self.seconds += time.perf_counter() - t


def standin_run(data: dict, base: str, pods: list[dict], percentage: int) -> tuple[float, float, float]:
    """(pods/s, share of bindings on the node the extender scored 10, share of the time in extender
    calls) through the stand-in."""
    from standin import ExtenderConfig, HTTPExtender, StandIn

    from kubegpu.model.cluster import ClusterState
    from kubegpu.model.decode import decode_object
    from kubegpu.scheduling.snapshot import SchedulingSnapshot

    objs = [decode_object(i) for i in data["items"]]
    state = ClusterState(objs)
    node_docs = {i["metadata"]["name"]: i for i in data["items"] if i["kind"] == "Node"}
    client = TimedClient()
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
    client.close()
    return len(pods) / dt, (agree / bound if bound else float("nan")), client.seconds / dt


def event_to_score(data: dict, pods: list[dict], names: list[str], events: int) -> tuple[list[float], list[float], int]:
    """(seconds to apply a watched bind, seconds until the next prioritize answer includes it, binds applied).

    In-process, on the extender's own store and verbs: each pending pod is bound (as another
    scheduler would) to the node prioritize scored 10 for it, the watch line is handed to the
    extender's live cache hook, and the next prioritize for the same pod is answered from the
    state that counts it (the node's placement version moved). The HTTP hop of that answer is
    measured by the latency rows."""
    from kubegpu.extender.ledger import Ledger
    from kubegpu.extender.live import observe_pod_event
    from kubegpu.extender.metrics import ExtenderMetrics
    from kubegpu.extender.service import Extender
    from kubegpu.extender.state import ExtenderStore
    from kubegpu.model.cluster import ClusterState
    from kubegpu.model.decode import decode_object

    store = ExtenderStore(policy="fgd", seed=1)
    store.install(ClusterState([decode_object(i) for i in data["items"]]))
    book = Ledger(None)
    ext = Extender(store, book, ExtenderMetrics(store, book), max_work_lost=8.0, assume=False)
    apply_s, seen_s, applied = [], [], 0
    for k in range(events):
        pod = pods[k % len(pods)]
        body = msgspec.json.encode({"Pod": pod, "Nodes": None, "NodeNames": names})
        chosen = [h["Host"] for h in msgspec.json.decode(ext.prioritize(body)) if h["Score"] == 10]
        if not chosen:
            continue
        doc = json.loads(json.dumps(pod))
        doc["metadata"].update(name=f"{doc['metadata']['name']}-elsewhere-{k}", uid=f"bench-bind-{k}")
        doc["spec"]["nodeName"] = chosen[0]
        doc["status"] = {"phase": "Running", "startTime": "2026-11-30T10:00:00Z"}
        line = msgspec.json.encode({"type": "ADDED", "object": doc})
        version = int(store.live.version[store.model.index[chosen[0]]])
        t = time.perf_counter()
        observe_pod_event(store, line)
        t1 = time.perf_counter()
        ext.prioritize(body)
        t2 = time.perf_counter()
        applied += int(store.live.version[store.model.index[chosen[0]]]) > version
        apply_s.append(t1 - t)
        seen_s.append(t2 - t)
    return apply_s, seen_s, applied


def shadow_batch(data: dict, binds: int, seed: int = 3) -> tuple[float, float, int]:
    """(seconds judging, seconds for the rest of the install (build, diff, swap), binds judged) when `kubegpu shadow` takes one generation in
    which `binds` pending pods were bound by the cluster's scheduler (each to a node with room for
    its GPUs, picked at random, as a scheduler that ignores fragmentation would)."""
    from kubegpu.extender.ledger import Ledger
    from kubegpu.extender.shadow import ShadowStore
    from kubegpu.model.cluster import ClusterState
    from kubegpu.model.decode import decode_object

    objs = [decode_object(i) for i in data["items"]]
    store = ShadowStore(ledger=Ledger(None), policy="fgd", seed=1)
    store.install(ClusterState(objs))
    live, model = store.live, store.model
    rng = np.random.default_rng(seed)
    after = json.loads(json.dumps(data))
    pending = [i for i in after["items"] if i["kind"] == "Pod" and not i["spec"].get("nodeName")]
    placed = 0
    for doc in pending:
        if placed == binds:
            break
        want = int(doc["spec"]["containers"][0]["resources"].get("limits", {}).get("nvidia.com/gpu", 0) or 0)
        room = np.flatnonzero(live.gpu_free >= want * 1000)
        if not room.size:
            continue
        doc["spec"]["nodeName"] = model.snapshot.names[int(rng.choice(room))]
        doc["status"] = {"phase": "Running", "startTime": "2026-11-30T10:00:00Z"}
        placed += 1
    judging = [0.0]
    judge = store.judge

    def timed_judge(pod):
        t = time.perf_counter()
        try:
            return judge(pod)
        finally:
            judging[0] += time.perf_counter() - t

    store.judge = timed_judge
    state = ClusterState([decode_object(i) for i in after["items"]])
    t = time.perf_counter()
    store.install(state)
    total = time.perf_counter() - t
    return judging[0], total - judging[0], store.judged


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50_000)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--policy", default="fgd")
    ap.add_argument("--binds", type=int, default=500, help="binds in the shadow batch (5 s at 100 binds/s)")
    ap.add_argument("--events", type=int, default=200, help="watched binds for the event-to-score rows")
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
            client = KeepAliveClient()
            latency(client, base, pending[:20], node_names, 20)   # warm up
            cpu0, own0 = cpu_seconds(proc.pid), time.process_time()
            big = latency(client, base, pending, node_names, args.calls)
            server_cpu = (cpu_seconds(proc.pid) - cpu0) / (2 * args.calls)
            client_cpu = (time.process_time() - own0) / (2 * args.calls)
            sample = random.Random(1).sample(node_names, min(500, len(node_names)))
            small = latency(client, base, pending, sample, args.calls)
            client.close()
            with httpx.Client() as client:
                via_httpx = latency(client, base, pending, node_names, max(args.calls // 2, 1))
                metrics = client.get(f"{base}/metrics").text
            build = float(re.search(r"^kubegpu_extender_build_seconds (\S+)", metrics, re.M).group(1))
            rate_all, agree_all, share_all = standin_run(data, base, pending[:200], 100)
            rate_def, agree_def, share_def = standin_run(data, base, pending[200:400], 0)
            rss = rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        apply_s, seen_s, applied = (event_to_score(data, pending[400:], node_names, args.events) if args.events
                                    else ([float("nan")], [float("nan")], 0))
        judge_s, shadow_build_s, judged = shadow_batch(data, args.binds) if args.binds else (float("nan"),) * 2 + (0,)
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
        (f"CPU per call at {n} names, server (all of it) / client ms", f"{server_cpu * 1e3:.2f} / {client_cpu * 1e3:.2f}",
         ""),
        (f"same, httpx client, filter / prioritize, {n} names: p50 ms",
         f"{pct(via_httpx['filter'], 50):.2f} / {pct(via_httpx['prioritize'], 50):.2f}", ""),
        ("stand-in pods/s (percentageOfNodesToScore 100)", f"{rate_all:.0f}", ">= 100"),
        ("stand-in pods/s (adaptive: 500 of 5,000 sampled)", f"{rate_def:.0f}", ">= 100"),
        ("stand-in time in extender calls (100% / adaptive)", f"{share_all:.0%} / {share_def:.0%}", ""),
        ("bound on the policy's node (100% / adaptive)", f"{agree_all:.1%} / {agree_def:.1%}", ""),
        (f"watched bind applied / in the next score: p50 / p99 ms ({applied} of {len(apply_s)})",
         f"{pct(apply_s, 50):.2f} / {pct(apply_s, 99):.2f}, {pct(seen_s, 50):.1f} / {pct(seen_s, 99):.1f}",
         "p99 <= 100"),
        (f"shadow: {judged} binds in one generation, judged s (binds/s) / rest s",
         f"{judge_s:.2f} ({judged / max(judge_s, 1e-9):.0f}/s) / {shadow_build_s:.2f}", ">= 100/s"),
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
