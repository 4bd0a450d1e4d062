"""Benchmark: `kubegpu why --all -o json` end to end, as a user runs it.

Writes the synthetic 5,000-node / 50,000-pod / 1,000-pending dump (bench/synthetic_cluster.py) in
five variants to a temp dir: full (no free GPU at all), fragmented (1-3 free GPUs on every node,
pending pods ask 4 or 8, so each needs moves), each of those with every pending pod carrying a
required anti-affinity and a zone spread constraint, and volumes (CSINode attach limits and two
local NVMe PVs on every GPU node, EBS claims on running pods, a local-NVMe claim on every pending
pod). Runs the real CLI in a subprocess with stdout redirected to a file, then parses the file
back and counts. Reports wall time, the child's CPU seconds and peak RSS (getrusage
RUSAGE_CHILDREN), output size, reports, pending pods present, and how many pending workloads got a
move remedy. Targets: < 10 s wall, < 2 GB RSS, < 200 MB output, every pod present.

    PYTHONPATH=src python bench/bench_why.py [--nodes 5000] [--pods 50000] [--pending 1000] [--cases full,volumes]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_cluster import write_synthetic  # noqa: E402


# the installed command; its module when it is not on PATH (same entry point either way)
KUBEGPU = [shutil.which("kubegpu")] if shutil.which("kubegpu") else [sys.executable, "-m", "kubegpu.cli.main"]


def run_case(name: str, dump: Path, out: Path) -> dict:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu0 = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    t0 = time.perf_counter()
    with out.open("wb") as fh:
        proc = subprocess.run([*KUBEGPU, "why", "--all", "-o", "json", "--snapshot", str(dump)],
                              stdout=fh, stderr=subprocess.PIPE, env=os.environ.copy())
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss = usage.ru_maxrss  # peak of the largest child so far, KiB
    cpu = usage.ru_utime + usage.ru_stime - cpu0  # this child's CPU seconds (honest on a busy machine)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: exit {proc.returncode}: {proc.stderr.decode()[-400:]}")
    data = json.loads(out.read_text())
    expected = sum(1 for item in json.loads(dump.read_text())["items"]
                   if item["kind"] == "Pod" and not item["spec"].get("nodeName"))
    moves = {r["pod"] for r in data if any(m["kind"] == "move-pods" for m in r["remedies"])}
    return {"case": name, "wall_s": wall, "cpu_s": cpu, "rss_mib": max(rss, before) / 1024, "out_mb": out.stat().st_size / 1e6,
            "reports": len(data), "expected": expected, "pending": sum(not r["schedulable"] for r in data),
            "with_move": len(moves)}


CASES = {"full": {}, "full+aff": {"affinity": True}, "frag": {"fragmented": True},
         "frag+aff": {"affinity": True, "fragmented": True}, "volumes": {"volumes": True}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50000)
    ap.add_argument("--pending", type=int, default=1000)
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.cases.split(","):
            if name not in CASES:
                raise SystemExit(f"unknown case {name!r}; known: {', '.join(CASES)}")
            dump = write_synthetic(Path(tmp) / f"{name}.json", nodes=args.nodes, pods=args.pods,
                                   pending=args.pending, **CASES[name])
            rows.append(run_case(name, dump, Path(tmp) / f"{name}.out.json"))
            (Path(tmp) / f"{name}.out.json").unlink()
    print(f"{'case':<9} {'nodes':>6} {'pods':>6} {'wall s':>7} {'cpu s':>6} {'peak RSS MiB':>13} {'out MB':>7} "
          f"{'reports':>8} {'pending':>8} {'move remedy':>12}")
    for r in rows:
        ok = "" if r["reports"] == r["expected"] else f"  MISSING {r['expected'] - r['reports']}"
        print(f"{r['case']:<9} {args.nodes:>6} {args.pods:>6} {r['wall_s']:>7.2f} {r['cpu_s']:>6.1f} {r['rss_mib']:>13.0f} "
              f"{r['out_mb']:>7.1f} {r['reports']:>8} {r['pending']:>8} {r['with_move']:>12}{ok}")
    print("(RSS: the largest child so far, so each row is the max over the rows up to it)")


if __name__ == "__main__":
    main()
