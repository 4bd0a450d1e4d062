"""Benchmark: one simulated week of a 1,000-GPU-node cluster, autoscaler on, ~100,000 jobs; and the
40-node seed-flapping day. Runs `kubegpu simulate run` as a user would (a fresh process each),
and prints wall time and peak memory (max RSS of the child).

    PYTHONPATH=src python3 bench/bench_simulate_week.py            # targets: < 60 s and < 2 GB; < 2 s
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WEEK = """
name: week-1000-gpu-nodes
seed: 7
duration: 168h
cluster:
  scheduler_policy: most-allocated
  node_groups:
    gpu:
      {gpus: 8, cpu: 96, memory: 1152Gi, gpu_model: A100, min: 700, max: 1000, initial: 900,
       price_per_hour: 30, provision_time: 4m, provision_jitter: 2m, gpu_ready_lag: 60s}
workload:
  priority_classes: {prod: {value: 1000}, batch: {value: 0}}
  generators:
    - kind: poisson
      name: batch
      rate_per_hour: 520
      median_duration: 90m
      sigma: 1.0
      gpus: {"1": 50, "2": 15, "4": 15, "8": 20}
      gang_pods: {"1": 90, "2": 8, "4": 2}
      checkpoint_interval: 30m
      restart_overhead: 5m
      pod: {cpu: 8, memory: 64Gi, priority_class: batch}
    - kind: inference-peaks
      name: prod
      base_replicas: 200
      peak_replicas: 800
      first_peak: 9h
      period: 90m
      peak_duration: 30m
      peaks_per_day: 6
      jitter: 3
      step: 1m
      pod: {gpus: 1, cpu: 8, memory: 64Gi, priority_class: prod}
autoscaler:
  provider: cluster-autoscaler
billing: {granularity: 60s, minimum: 60s}
"""


def timed(args: list[str]) -> tuple[float, float, float, dict]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu0 = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "simulate", "run", *args, "-o", "json"],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(proc.stderr)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss = max(usage.ru_maxrss, before) / 1024.0
    return wall, usage.ru_utime + usage.ru_stime - cpu0, rss, json.loads(proc.stdout)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        week = Path(tmp) / "week.yaml"
        week.write_text(WEEK)
        rows = [("seed-flapping day, 40 nodes", *timed(["--scenario", "seed-flapping"]), "< 2 s"),
                ("1 week, 1,000 GPU nodes, autoscaler on", *timed([str(week)]), "< 60 s, < 2 GB")]
    print(f"{'case':42} {'wall s':>8} {'CPU s':>8} {'max RSS MB':>11} {'pods':>8} {'scale-ups':>9}  target")
    for name, wall, cpu, rss, result, target in rows:
        pods = sum(c["pods"] for c in result["pods"]["by_class"].values())
        print(f"{name:42} {wall:8.2f} {cpu:8.2f} {rss:11.0f} {pods:8d} {result['autoscaler']['scale_ups']:9d}  {target}")
    print("(max RSS is the largest of the runs so far: the peak of the week run)")


if __name__ == "__main__":
    main()
