"""Benchmark: load and index a synthetic 5,000-node / 50,000-pod dump (target < 10 s, < 2 GB RSS).

Run: python bench/bench_load.py [--nodes 5000 --pods 50000]
Each measurement runs in a fresh process so peak RSS is the loader's own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_cluster import write_synthetic  # noqa: E402

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from kubegpu.sources.snapshot import read_snapshot
from kubegpu.sources.documents import load_cluster
from kubegpu.model.nodetable import NodeTable
t1 = time.perf_counter()
docs = read_snapshot(sys.argv[1]); t2 = time.perf_counter()
state = load_cluster(docs); t3 = time.perf_counter()
table = NodeTable.from_cluster(state)
table.dev_used  # the device packing is made on first read: time it with the table
t4 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"import": t1 - t0, "read": t2 - t1, "decode+index": t3 - t2, "nodetable": t4 - t3,
                  "total": t4 - t0, "rss_mb": rss, "nodes": len(state.nodes), "pods": len(state.pods)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = write_synthetic(Path(tmp) / "cluster.json", nodes=a.nodes, pods=a.pods)
        size_mb = path.stat().st_size / 2**20
        runs = [json.loads(subprocess.run([sys.executable, "-c", _CHILD, str(path)], check=True,
                                          capture_output=True, text=True).stdout) for _ in range(a.repeat)]
    best = min(runs, key=lambda r: r["total"])
    print(f"load+index {best['nodes']} nodes / {best['pods']} pods ({size_mb:.0f} MB JSON), best of {a.repeat}")
    print(f"{'stage':<14}{'seconds':>10}")
    for key in ("import", "read", "decode+index", "nodetable", "total"):
        print(f"{key:<14}{best[key]:>10.2f}")
    print(f"{'peak RSS MB':<14}{max(r['rss_mb'] for r in runs):>10.0f}")
    print(f"target: total < 10 s, RSS < 2048 MB -> {'PASS' if best['total'] < 10 and best['rss_mb'] < 2048 else 'FAIL'}")


if __name__ == "__main__":
    main()
