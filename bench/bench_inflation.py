"""Benchmark the inflation engine: one FGD run, then the 8-policy × 10-seed grid on one trace.

    PYTHONPATH=src python bench/bench_inflation.py                  # both, default trace, 2 workers
    PYTHONPATH=src python bench/bench_inflation.py --single-only
    PYTHONPATH=src python bench/bench_inflation.py --nodes N.csv --pods P.csv --workers 2

Targets (2 cores): one FGD run < 10 s; the full grid < 5 min. Prints a table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from kubegpu.placement.registry import POLICY_NAMES
from kubegpu.simulate.inflation import run_experiment, simulate_run
from kubegpu.simulate.trace import load_nodes, load_pods

TRACE_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "alibaba-gpu-v2023"
GRID_POLICIES = [p for p in POLICY_NAMES if p != "kubegpu"]  # the 8 reference policies (6 paper + 2 kube)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default=str(TRACE_DIR / "openb_node_list_gpu_node.csv"))
    parser.add_argument("--pods", default=str(TRACE_DIR / "openb_pod_list_default.csv"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=10, help="seeds 42 .. 42+N-1 for the grid")
    parser.add_argument("--single-only", action="store_true")
    parser.add_argument("--with-kubegpu", action="store_true", help="add our policy to the grid (9 policies)")
    args = parser.parse_args(argv)
    nodes, pods = load_nodes(args.nodes), load_pods(args.pods)
    print(f"trace: {Path(args.pods).name} ({len(pods)} pods), {len(nodes.names)} nodes, "
          f"{nodes.total_gpus} GPUs; {os.cpu_count()} CPUs")

    start = time.perf_counter()
    curves = simulate_run(nodes, pods, "fgd", 42)
    single = time.perf_counter() - start
    print(f"\n| benchmark | pods | seconds | target |\n|---|---|---|---|")
    print(f"| one FGD inflation run (seed 42) | {curves.arrived_milli.size} | {single:.2f} | < 10 |")
    if args.single_only:
        return 0

    policies = GRID_POLICIES + (["kubegpu"] if args.with_kubegpu else [])
    seeds = list(range(42, 42 + args.seeds))
    start = time.perf_counter()
    results = run_experiment(nodes, pods, policies, seeds, trace=Path(args.pods).stem, workers=args.workers)
    grid = time.perf_counter() - start
    print(f"| {len(policies)} policies × {len(seeds)} seeds, {args.workers} workers | – | {grid:.1f} | < 300 |")
    print("\n| policy | unallocated GPU % at 100 % arrival (mean ± sd) |\n|---|---|")
    for r in results:
        print(f"| {r.policy} | {r.unallocated_pct_at_100.mean:.2f} ± {r.unallocated_pct_at_100.sd:.2f} |")
    return 0 if single < 10 and grid < 300 else 1


if __name__ == "__main__":
    sys.exit(main())
