"""Benchmark: the modelled rebalancer's week at 1,000 nodes (examples/rebalance/week-1000-spread.yaml), off and on,
one fresh `kubegpu simulate run` process each; prints wall and CPU time and what the rebalancer did.

    PYTHONPATH=src python3 bench/bench_rebalance_week.py [SEED]     # targets: < 3 min wall a run, on < 1.5 x off CPU
"""

from __future__ import annotations

import sys
from pathlib import Path

from bench_simulate_week import timed

SCENARIO = Path(__file__).resolve().parents[1] / "examples" / "rebalance" / "week-1000-spread.yaml"


def main() -> None:
    seed = sys.argv[1] if len(sys.argv) > 1 else "1"
    rows = []
    for mode in ("off", "on"):
        args = [str(SCENARIO), "--set", f"seed={seed}", "--set", f"rebalancer.enabled={'true' if mode == 'on' else 'false'}"]
        wall, cpu, _, result = timed(args)
        rows.append((mode, wall, cpu, result["rebalance"]))
    print(f"{'rebalancer':10} {'wall s':>8} {'CPU s':>8} {'moves':>6} {'p95 wait s':>11} {'GPU-h lost':>11}  target")
    for mode, wall, cpu, reb in rows:
        print(f"{mode:10} {wall:8.1f} {cpu:8.1f} {reb['moves']:6d} {reb['gpu_pod_wait_seconds']['p95']:11.0f} "
              f"{reb['gpu_hours_lost']:11.1f}  < 180 s wall")
    print(f"CPU on / off: {rows[1][2] / rows[0][2]:.2f} (target < 1.5)")


if __name__ == "__main__":
    main()
