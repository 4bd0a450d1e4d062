"""Benchmark: `why --all` on a synthetic 5,000-node / 50,000-pod dump with 1,000 pending pods.

Generates the dump itself (a v1 List JSON in a temp dir), then times: load (read + decode +
ClusterState), explain (filters, preemption dry runs, remedies for every pending pod), JSON
encoding of 10 reports, and reports CPU seconds (honest on a busy machine) and peak RSS.
Target: load + explain < 10 s on 2 cores.

    PYTHONPATH=src python bench/bench_why.py [--nodes 5000] [--pods 50000] [--pending 1000]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import tempfile
import time
from pathlib import Path

GPU = "nvidia.com/gpu"
TOL = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]
TAINT = [{"key": GPU, "value": "present", "effect": "NoSchedule"}]
POOLS = (("a100", "NVIDIA-A100-SXM4-80GB", 0.45), ("h100", "NVIDIA-H100-80GB-HBM3", 0.25),
         ("l40s", "NVIDIA-L40S", 0.1), ("cpu", None, 0.2))


def _node(name, pool, product):
    alloc = {"cpu": "190", "memory": "1900Gi", "pods": "110", "ephemeral-storage": "3Ti"}
    labels = {"kubernetes.io/hostname": name, "pool": pool, "topology.kubernetes.io/zone": f"z{hash(name) % 3}"}
    spec = {}
    if product:
        alloc[GPU] = "8"
        labels.update({"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": "8"})
        spec["taints"] = TAINT
    else:
        alloc.update(cpu="62", memory="240Gi")
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
            "status": {"allocatable": alloc, "capacity": alloc, "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name, ns, *, gpus, cpu, mem, node=None, priority=1000, selector=None, tol=True, owner=None, labels=None):
    res = {"requests": {"cpu": str(cpu), "memory": f"{mem}Gi"}}
    if gpus:
        res["limits"] = {GPU: str(gpus)}
    spec = {"containers": [{"name": "main", "image": "img", "resources": res}], "priority": priority,
            "tolerations": TOL if tol else [], "schedulerName": "default-scheduler"}
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = selector
    meta = {"name": name, "namespace": ns, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "controller": True,
                                    "uid": owner}]
    status = {"phase": "Running", "startTime": "2026-11-30T08:00:00Z"} if node else {
        "phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def generate(n_nodes: int, n_pods: int, n_pending: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    items, nodes = [], []
    for k in range(n_nodes):
        r, acc = rng.random(), 0.0
        for pool, product, share in POOLS:
            acc += share
            if r <= acc:
                break
        name = f"{pool}-{k:05d}"
        nodes.append((name, pool, product))
        items.append(_node(name, pool, product))
    free = {name: 8 if product else 0 for name, _, product in nodes}
    cpu_free = {name: 190 if product else 62 for name, _, product in nodes}
    gpu_nodes = [n for n in nodes if n[2]]
    cpu_nodes = [n for n in nodes if not n[2]]
    for k in range(n_pods - n_pending):
        if rng.random() < 0.6 and gpu_nodes:
            name, pool, product = rng.choice(gpu_nodes)
            want = rng.choice((1, 1, 2, 4, 8))
            if free[name] < want:
                want = free[name]
            if want == 0 or cpu_free[name] < 8:
                name, pool, product = rng.choice(cpu_nodes)
                want = 0
        else:
            name, pool, product = rng.choice(cpu_nodes)
            want = 0
        cpu = 8 if want else 1
        if cpu_free[name] < cpu:
            continue
        free[name] -= want
        cpu_free[name] -= cpu
        items.append(_pod(f"run-{k}", f"team-{k % 40}", gpus=want, cpu=cpu, mem=4 * cpu, node=name,
                          priority=rng.choice((100, 1000, 1000, 10000)), owner=f"rs-{k % 2000}",
                          labels={"app": f"app-{k % 2000}"}))
    templates = []
    for t in range(40):
        pool = rng.choice(("a100", "h100", "l40s", None))
        templates.append(dict(gpus=rng.choice((1, 2, 4, 8)), cpu=rng.choice((8, 16, 32)), mem=64,
                              priority=rng.choice((100, 1000, 100000)), selector={"pool": pool} if pool else None,
                              tol=rng.random() > 0.1, owner=f"pending-rs-{t}", labels={"app": f"pending-{t}"}))
    for k in range(n_pending):
        t = templates[k % len(templates)] if k % 20 else templates[(k // 20) % len(templates)]
        items.append(_pod(f"pending-{k}", f"team-{k % 40}", **t))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50000)
    ap.add_argument("--pending", type=int, default=1000)
    args = ap.parse_args()

    from kubegpu.explain.report import explain_all
    from kubegpu.cli.render import dump_json
    from kubegpu.sources.documents import load_cluster
    from kubegpu.sources.snapshot import read_snapshot

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dump.json"
        path.write_text(json.dumps(generate(args.nodes, args.pods, args.pending)))
        c0, t0 = time.process_time(), time.perf_counter()
        state = load_cluster(read_snapshot(str(path)))
        t1 = time.perf_counter()
        reports = explain_all(state)
        c2, t2 = time.process_time(), time.perf_counter()
        size = len(dump_json(reports[:10]))
        t3 = time.perf_counter()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pending = sum(not r.schedulable for r in reports)
    print(f"{'nodes':>8} {'pods':>8} {'pending':>8} {'load s':>8} {'explain s':>10} {'total s':>8} "
          f"{'cpu s':>7} {'peak RSS MiB':>13}")
    print(f"{len(state.nodes):>8} {len(state.pods):>8} {len(reports):>8} {t1 - t0:>8.2f} {t2 - t1:>10.2f} "
          f"{t2 - t0:>8.2f} {c2 - c0:>7.2f} {rss:>13.0f}")
    print(f"({pending} still unschedulable; JSON of 10 reports: {size / 1e6:.1f} MB in {t3 - t2:.2f} s)")


if __name__ == "__main__":
    main()
