"""Placement quality through the kube-scheduler protocol: the FGD inflation experiment via the extender.

For each policy and seed, one run of `simulate inflation` (the policy run directly) and one
replay of the same run through the kube-scheduler stand-in and `kubegpu extender`
(tests/extender/replay.py: same shuffle / resample / tune / tie order / policy seed; each pod
filtered by the stand-in's core filters and the extender's /filter, scored by the stand-in's
own NodeResourcesFit LeastAllocated + NodeResourcesBalancedAllocation (cpu, memory; weight 1
each, upstream default-profile weights) plus the extender's /prioritize score x weight x 10, the
highest total bound with seeded random tie-breaking). Prints unallocated GPU % at 100 % arrival
both ways, the difference, and the agreement rate (pods the extender scored whose bound node
is the policy's own choice on the same state), per extender weight.

    PYTHONPATH=src python bench/bench_protocol_quality.py \\
        [--trace default] [--policies fgd,kubegpu] [--weights 1,2,5,10] [--seeds 42] \\
        [--node-stride 4] [--loopback]

`--node-stride K` keeps every K-th node of the trace's GPU node list (the pod list is inflated
to the smaller capacity the same way), so a run takes minutes on a loaded 2-core machine;
`--node-stride 1` is the full 1,523-node cluster. Calls go through the extender's service
functions (same request / reply bytes, no socket) unless `--loopback` (real HTTP to uvicorn).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "extender"), str(ROOT / "tests")]

from replay import MANAGED, replay_run, strided  # noqa: E402

from kubegpu.fragmentation.shapes import mix_from_tasks  # noqa: E402
from kubegpu.simulate.inflation import run_result  # noqa: E402
from kubegpu.simulate.trace import load_nodes, load_pods  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "alibaba-gpu-v2023"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--trace", default="default", help="openb_pod_list_<TRACE>.csv")
    ap.add_argument("--policies", default="fgd,kubegpu")
    ap.add_argument("--weights", default="1,2,5,10")
    ap.add_argument("--seeds", default="42")
    ap.add_argument("--node-stride", type=int, default=4)
    ap.add_argument("--loopback", action="store_true")
    ap.add_argument("--managed", default="gpu,all",
                    help="managedResources: gpu (the GPU resources, CPU-only pods not sent) and/or all ([])")
    args = ap.parse_args()
    data = Path(args.data)
    if not data.is_dir():
        raise SystemExit(f"{data}: the shared openb traces are not here")
    nodes = strided(load_nodes(data / "openb_node_list_gpu_node.csv"), args.node_stride)
    tasks = load_pods(data / f"openb_pod_list_{args.trace}.csv")
    mix = mix_from_tasks(tasks)
    seeds = [int(s) for s in args.seeds.split(",")]
    weights = [int(w) for w in args.weights.split(",")]
    print(f"trace {args.trace}: {len(nodes.names)} nodes ({nodes.total_gpus} GPUs, every {args.node_stride}. node), "
          f"{len(tasks)} pods; seeds {seeds}; calls via {'loopback HTTP' if args.loopback else 'service functions'}")
    print(f"{'policy':<9}{'sent':>5}{'weight':>7}{'direct %':>10}{'protocol %':>12}{'diff pp':>9}{'agree %':>9}"
          f"{'scored':>8}{'s/run':>7}")
    for policy in args.policies.split(","):
        direct = [100.0 - run_result(nodes, tasks, policy, s, mix=mix).alloc_pct.get("100", float("nan"))
                  for s in seeds]
        d_mean = sum(direct) / len(direct)
        for sent, weight in [(m, w) for m in args.managed.split(",") for w in weights]:
            managed = MANAGED if sent == "gpu" else []
            t0 = time.perf_counter()
            runs = [replay_run(nodes, tasks, policy, s, weight=weight, loopback=args.loopback, managed=managed)
                    for s in seeds]
            secs = (time.perf_counter() - t0) / len(seeds)
            p_mean = sum(r.unallocated_at_100 for r in runs) / len(runs)
            scored = sum(r.scored for r in runs)
            agree = 100.0 * sum(r.agreed for r in runs) / max(scored, 1)
            print(f"{policy:<9}{sent:>5}{weight:>7}{d_mean:>10.2f}{p_mean:>12.2f}{p_mean - d_mean:>+9.2f}{agree:>9.1f}"
                  f"{scored:>8}{secs:>7.0f}", flush=True)


if __name__ == "__main__":
    main()
