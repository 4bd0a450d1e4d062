"""Benchmark: the five reading commands on one big dump, end to end, as a user runs them.

Default: the synthetic 20,000-node / 200,000-pod / 4,000-pending dump (bench/synthetic_cluster.py),
written once to --dump and reused on later runs (it takes half a minute and 180 MB). Each command
runs `kubegpu CMD -o json --snapshot DUMP` in a subprocess with stdout to a file; per run: wall
time, the child's own CPU seconds and peak RSS (os.wait4), output size. `why --all` is parsed back:
every pending pod present, every node set resolvable (explain.nodesets). Medians of --repeat runs.
Targets: each < 30 s wall, < 4 GB RSS, < 500 MB output (on 2 cores).

    PYTHONPATH=src python bench/bench_scale.py [--dump DUMP.json (default: kubegpu-20k.json in the temp folder)] [--nodes 20000 --pods 200000
        --pending 4000] [--commands status,why,frag,doctor,audit] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_cluster import write_synthetic  # noqa: E402

KUBEGPU = [shutil.which("kubegpu")] if shutil.which("kubegpu") else [sys.executable, "-m", "kubegpu.cli.main"]
COMMANDS = {"status": ["status"], "why": ["why", "--all"], "frag": ["frag"], "doctor": ["doctor"],
            "audit": ["audit"]}
TARGETS = {"wall_s": 30.0, "rss_mib": 4096.0, "out_mb": 500.0}


def run_once(args: list[str], dump: Path, out: Path) -> dict:
    """One run in a child process: wall, its CPU seconds and peak RSS (wait4), output bytes, exit code."""
    t0 = time.perf_counter()
    with out.open("wb") as fh:
        proc = subprocess.Popen([*KUBEGPU, *args, "-o", "json", "--snapshot", str(dump)], stdout=fh,
                                stderr=subprocess.PIPE, env=os.environ.copy())
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):  # 1: findings (audit, doctor)
        raise SystemExit(f"{' '.join(args)}: exit {proc.returncode}: {err.decode()[-400:]}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024,
            "out_mb": out.stat().st_size / 1e6}


def check_why(out: Path, pending: int) -> str:
    """Every pending pod is reported and every node set resolves to a full member list."""
    from kubegpu.explain.nodesets import resolve_node_sets

    reports = list(resolve_node_sets(json.loads(out.read_bytes())))
    broken = sum(1 for r in reports for g in r["node_groups"] if g["nodes"] is None or len(g["nodes"]) != g["count"])
    return f"{len(reports)}/{pending} pods, {broken} unresolved groups"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", type=Path, default=Path(tempfile.gettempdir()) / "kubegpu-20k.json",
                    help="the dump to read; written first when it does not exist")
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--pods", type=int, default=200_000)
    ap.add_argument("--pending", type=int, default=4_000)
    ap.add_argument("--commands", default=",".join(COMMANDS), help=f"comma-separated, of: {', '.join(COMMANDS)}")
    ap.add_argument("--repeat", type=int, default=1, help="runs per command (medians are printed)")
    args = ap.parse_args()
    names = args.commands.split(",")
    unknown = [n for n in names if n not in COMMANDS]
    if unknown:
        raise SystemExit(f"unknown command(s) {', '.join(unknown)}; known: {', '.join(COMMANDS)}")
    if not args.dump.exists():
        write_synthetic(args.dump, nodes=args.nodes, pods=args.pods, pending=args.pending)
    print(f"dump: {args.dump} ({args.dump.stat().st_size / 1e6:.0f} MB); medians of {args.repeat} run(s)")
    print(f"{'command':<8} {'wall s':>7} {'cpu s':>7} {'peak RSS MiB':>13} {'out MB':>8}  verdict")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        for name in names:
            runs = [run_once(COMMANDS[name], args.dump, out) for _ in range(args.repeat)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            over = [k for k, limit in TARGETS.items() if med[k] >= limit]
            note = check_why(out, args.pending) if name == "why" else ""
            verdict = ("FAIL " + ",".join(over) if over else "PASS") + (f"; {note}" if note else "")
            print(f"{name:<8} {med['wall_s']:>7.1f} {med['cpu_s']:>7.1f} {med['rss_mib']:>13.0f} {med['out_mb']:>8.1f}"
                  f"  {verdict}", flush=True)
            out.unlink()
    print(f"targets: wall < {TARGETS['wall_s']:.0f} s, RSS < {TARGETS['rss_mib']:.0f} MiB, "
          f"output < {TARGETS['out_mb']:.0f} MB (cpu s: the child's own, honest on a busy machine)")


if __name__ == "__main__":
    main()
