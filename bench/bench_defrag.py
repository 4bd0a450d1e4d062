"""Defrag planner benchmark: heuristic speed at scale, and its moves against the exact optimum.

    PYTHONPATH=src python bench/bench_defrag.py                # 1,000 GPU nodes / 10,000 pods + 60 small instances
    PYTHONPATH=src python bench/bench_defrag.py --nodes 200 --small 20

Large: fragmented 8-GPU nodes (about one free GPU each), 10 pods per node (1/2/4-GPU training
pods plus CPU-only pods), a PDB on some services; goals: room for ten 4-GPU pods, a pending
8-GPU pod, and emptying five nodes. Small: random 5-10 node clusters where the MILP proves
the optimum; the table shows how many more moves the heuristic needs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from kubegpu.defrag import Goal, plan_defrag
from kubegpu.model.cluster import ClusterState
from kubegpu.sources.documents import Documents, load_cluster

TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _node(name: str, gpus: int = 8) -> dict:
    alloc = {"cpu": "96", "memory": "1000Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "pool": "training",
                                                  "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
            "status": {"capacity": alloc, "allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}]}}


def _pod(name: str, node: str | None, gpus: int, owner: str, rng: random.Random, ns: str = "ml") -> dict:
    res = {"cpu": f"{rng.choice([1, 2, 4, 8])}", "memory": f"{rng.choice([8, 16, 32])}Gi"}
    if gpus:
        res["nvidia.com/gpu"] = str(gpus)
    hour = rng.randint(0, 11)
    meta = {"name": name, "namespace": ns, "uid": f"uid-{name}", "labels": {"app": owner},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                 "uid": f"uid-{owner}", "controller": True}],
            "annotations": {"kubegpu.io/checkpoint-interval": rng.choice(["30m", "1h", "2h"])}}
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": res, "limits": res}}],
                  "tolerations": [TOLERATION]}
    status: dict = {"phase": "Pending"}
    if node:
        spec["nodeName"] = node
        status = {"phase": "Running", "startTime": f"2026-12-01T{hour:02d}:00:00Z",
                  "conditions": [{"type": "Ready", "status": "True"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def synthetic(nodes: int, pods_per_node: int, seed: int, *, free_max: int = 1) -> ClusterState:
    rng = random.Random(seed)
    items: list[dict] = []
    for i in range(nodes):
        name = f"gpu-{i:04d}"
        items.append(_node(name))
        budget = 8 - rng.randint(0, free_max)
        count = 0
        while budget > 0 and count < pods_per_node:
            g = min(rng.choice([1, 1, 1, 1, 2, 2, 4]), budget)
            items.append(_pod(f"p-{i}-{count}", name, g, f"svc-{i % 50}-{count % 3}", rng))
            budget -= g
            count += 1
        while count < pods_per_node:
            items.append(_pod(f"p-{i}-{count}", name, 0, f"cpu-{i % 40}", rng))
            count += 1
    items.append(_pod("want-8", None, 8, "want", rng))
    for k in range(0, 50, 5):
        items.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                      "metadata": {"name": f"svc-{k}-0", "namespace": "ml"},
                      "spec": {"selector": {"matchLabels": {"app": f"svc-{k}-0"}}, "maxUnavailable": 1}})
    docs = Documents(source="bench")
    for o in items:
        docs.add(o, "bench")
    state = load_cluster(docs)
    state.captured_at = "2026-12-01T12:00:00Z"
    return state


def large(nodes: int) -> None:
    t0 = time.perf_counter()
    state = synthetic(nodes, 10, seed=1)
    print(f"cluster: {len(state.nodes)} GPU nodes, {len(state.pods)} pods (built in {time.perf_counter() - t0:.1f} s)")
    print(f"{'goal':34} {'moves':>5} {'plan s':>7} {'heuristic s':>11}  result")
    for goal in (Goal(kind="size", size=4, count=10), Goal(kind="pod", pod="ml/want-8"),
                 Goal(kind="empty-nodes", count=5)):
        t0 = time.perf_counter()
        plan = plan_defrag(state, goal, exact="never")
        total = time.perf_counter() - t0
        print(f"{goal.describe():34} {len(plan.moves):>5} {total:>7.1f} {plan.solver.heuristic_seconds:>11.2f}  "
              f"{'ok' if plan.feasible else plan.message}")


def small(instances: int) -> None:
    rows = []
    goals = (Goal(kind="size", size=4, count=2), Goal(kind="size", size=8), Goal(kind="pod", pod="ml/want-8"),
             Goal(kind="empty-nodes", count=2))
    for seed in range(instances):
        rng = random.Random(seed)
        state = synthetic(rng.randint(5, 10), rng.randint(3, 8), seed=seed, free_max=3)
        goal = goals[seed % len(goals)]
        plan = plan_defrag(state, goal, exact="always", milp_time_limit=30)
        s = plan.solver
        if s.milp_status == "optimal" and s.milp_moves is not None and s.heuristic_moves is not None:
            rows.append((goal.kind, s.heuristic_moves, s.milp_moves, s.heuristic_seconds, s.milp_seconds))
        elif s.milp_status == "optimal" and s.heuristic_moves is None:
            rows.append((goal.kind, None, s.milp_moves, s.heuristic_seconds, s.milp_seconds))
    solved = [r for r in rows if r[1] is not None]
    gaps = [(h - m) / m if m else 0.0 for _, h, m, _, _ in solved]
    within = sum(1 for g in gaps if g <= 0.05)
    print(f"\nsmall instances with a proven optimum: {len(rows)} "
          f"(heuristic found a plan in {len(solved)}, missed {len(rows) - len(solved)})")
    print(f"  moves: heuristic {sum(r[1] for r in solved)} vs optimal {sum(r[2] for r in solved)}; "
          f"total gap {(sum(r[1] for r in solved) / max(sum(r[2] for r in solved), 1) - 1):.1%}")
    if gaps:
        print(f"  per instance: within 5% of optimal {within}/{len(gaps)}, mean gap {statistics.mean(gaps):.1%}, "
              f"max gap {max(gaps):.1%}")
        print(f"  time: heuristic mean {statistics.mean(r[3] for r in solved):.3f} s, "
              f"MILP mean {statistics.mean(r[4] for r in solved):.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--small", type=int, default=60)
    args = ap.parse_args()
    large(args.nodes)
    small(args.small)


if __name__ == "__main__":
    main()
