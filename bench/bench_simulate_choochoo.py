"""Benchmark: kubegpu's event engine side by side with gpu-choochoo 0.1.0 (PyPI) on the same trace.

The trace: 20,000 jobs on 128 GPUs (16 nodes x 8), Poisson arrivals at ~90 % offered load, 72 % 1-GPU,
10 % 2, 10 % 4, 8 % 8-GPU jobs, log-normal durations (median 15 min). Both simulators are timed in
this one process run, on the same jobs, excluding interpreter start-up. gpu-choochoo places each job
on one node (best fit, FCFS or EASY backfill) and has no gangs or preemption; kubegpu runs its full
model: the kube-scheduler queue, 8-GPU jobs as 2 x 4-GPU gangs placed all-or-nothing across nodes,
10 % of the 1-GPU jobs at a higher priority that preempts (checkpoints every 30 min), most-allocated
scoring, the autoscaler off.

    pip install 'kubegpu[bench]'    # gpu-choochoo==0.1.0
    PYTHONPATH=src python3 bench/bench_simulate_choochoo.py [--jobs 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time
from pathlib import Path

import numpy as np

GPUS_PER_NODE, NODES = 8, 16


def synthetic_trace(n: int, seed: int = 11) -> list[dict]:
    rng = np.random.default_rng(seed)
    gpus = rng.choice([1, 2, 4, 8], size=n, p=[0.72, 0.10, 0.10, 0.08])
    durations = 900.0 * np.exp(rng.normal(0.0, 1.0, n))
    load = float((gpus * durations).mean())
    rate = 0.9 * NODES * GPUS_PER_NODE / load        # jobs per second at 90 % offered load
    arrivals = np.cumsum(rng.exponential(1.0 / rate, n))
    urgent = (gpus == 1) & (rng.random(n) < 0.10)
    return [{"id": f"j{i}", "submit": round(float(arrivals[i]), 3), "gpus": int(gpus[i]),
             "duration": round(float(max(durations[i], 1.0)), 3), "urgent": bool(urgent[i])} for i in range(n)]


def run_choochoo(trace: list[dict], scheduler: str) -> tuple[float, int]:
    from gpu_choochoo.core.cluster import Cluster
    from gpu_choochoo.core.node import Node
    from gpu_choochoo.schedulers.heuristic import BestFitBackfillScheduler, PureFCFSScheduler
    from gpu_choochoo.simulation.driver import SimulatorDriver

    nodes = [Node(f"n{i}", "A100", GPUS_PER_NODE, 640) for i in range(NODES)]
    cluster = Cluster(nodes)
    sched = (PureFCFSScheduler if scheduler == "fcfs" else BestFitBackfillScheduler)(cluster)
    jobs = [{"job_id": j["id"], "arrival_time": j["submit"], "gpus_required": j["gpus"], "duration_sec": j["duration"],
             "vram_required_gb": 10.0 * j["gpus"]} for j in trace]
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # it prints every event
        driver = SimulatorDriver(cluster, sched, jobs)
        driver.run_simulation()
    return time.perf_counter() - t0, len(cluster.completed_jobs)


def run_kubegpu(trace: list[dict], folder: Path) -> tuple[float, int, dict]:
    from kubegpu.simulate.results import summarise
    from kubegpu.simulate.results import simulate
    from kubegpu.simulate.scenario import load_scenario

    csv = folder / "trace.csv"
    rows = ["name,submit,duration,gpus,pods,cpu,memory,priority_class,checkpoint_interval,restart_overhead"]
    for j in trace:
        pods, per_pod = (2, 4) if j["gpus"] == 8 else (1, j["gpus"])
        rows.append(f"{j['id']},{j['submit']},{j['duration']},{per_pod},{pods},1,8Gi,"
                    f"{'urgent' if j['urgent'] else 'normal'},30m,1m")
    csv.write_text("\n".join(rows) + "\n")
    horizon = max(j["submit"] for j in trace) * 3 + 7 * 86400
    scenario = folder / "bench.yaml"
    scenario.write_text(f"""
name: choochoo-trace
duration: {horizon:.0f}s
cluster:
  scheduler_policy: most-allocated
  node_groups:
    gpu: {{gpus: {GPUS_PER_NODE}, cpu: 96, memory: 1Ti, min: {NODES}, max: {NODES}, initial: {NODES}}}
workload:
  trace: trace.csv
  priority_classes: {{urgent: {{value: 1000}}, normal: {{value: 0}}}}
autoscaler: {{provider: none}}
""")
    t0 = time.perf_counter()
    engine = simulate(load_scenario(str(scenario)))
    result = summarise(engine)
    wall = time.perf_counter() - t0
    done = sum(c["completed"] for c in result["pods"]["by_class"].values())
    return wall, done, result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=20000)
    args = ap.parse_args()
    trace = synthetic_trace(args.jobs)
    import kubegpu.simulate.results  # noqa: F401  (both simulators imported before timing)
    import kubegpu.placement.registry  # noqa: F401
    import gpu_choochoo.simulation.driver  # noqa: F401
    rows = []
    for sched in ("backfill", "fcfs"):
        wall, done = run_choochoo(trace, sched)
        rows.append((f"gpu-choochoo 0.1.0 ({sched})", wall, done, "-"))
    with tempfile.TemporaryDirectory() as tmp:
        wall, done, result = run_kubegpu(trace, Path(tmp))
    rows.append(("kubegpu simulate (full model)", wall, done, str(result["preemption"]["count"])))
    print(f"{len(trace):,} jobs on {NODES * GPUS_PER_NODE} GPUs ({NODES} nodes x {GPUS_PER_NODE})")
    print(f"{'simulator':34} {'wall s':>8} {'jobs done':>10} {'preemptions':>12}")
    for name, wall, done, pre in rows:
        print(f"{name:34} {wall:8.2f} {done:10d} {pre:>12}")
    fastest = min(r[1] for r in rows[:2])
    print(f"kubegpu / fastest gpu-choochoo: {rows[-1][1] / fastest:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
