"""`kubegpu` against `fgd` on trace variants the shared data does not contain.

The shared Alibaba traces vary one knob each (pinned GPU models 10/25 %, sharing 20-100 %,
multi-GPU 20/40 %, CPU-only pods). A default policy must not lose to FGD on a variant nobody
measured, so this script derives more from the default trace, deterministically:

* `pinN-MODEL`: N % of GPU pods pinned to one GPU model (T4, G2, or a model set);
* `specN`: N % of GPU pods pinned the way the shared gpuspec traces pin them (same model sets,
  same frequencies, drawn from openb_pod_list_gpuspec25.csv);
* `shareN`: N % of whole 1-GPU pods turned into a fractional share (gpu_milli from the trace's
  own fractional pods);
* `multiN`: N % of 1-GPU pods asking 2, 4 or 8 whole GPUs (1/2, 1/3, 1/6 of them).

    PYTHONPATH=src python bench/policy_variants.py                 # every variant, seeds 42-44
    PYTHONPATH=src python bench/policy_variants.py --variants pin2-T4,share50 --seeds 42-51

Prints one table: mean unallocated GPU % at 100 % arrival (tune 1.3), fgd and kubegpu on the
same seeds, and the difference. Reads ../shared (a benchmark, not part of kubegpu).
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from kubegpu.simulate.inflation import run_result
from kubegpu.simulate.trace import load_nodes, load_pods

ROOT = Path(__file__).resolve().parents[1]
TRACE_DIR = ROOT / ".." / "shared" / "data" / "alibaba-gpu-v2023"
VARIANTS = ("pin1-T4", "pin2-T4", "pin5-T4", "pin2-G2", "pin3-G2|T4", "spec2", "spec5",
            "share40", "share80", "multi30", "multi50")
FIELDS = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
          "creation_time", "deletion_time", "scheduled_time"]


def read_rows(name: str) -> list[dict[str, str]]:
    with (TRACE_DIR / f"openb_pod_list_{name}.csv").open(newline="") as fh:
        return [{k: row.get(k, "") or "" for k in FIELDS} for row in csv.DictReader(fh)]


def make_variant(name: str, seed: int = 7) -> list[dict[str, str]]:
    """The default trace with one knob turned, as described in the module docstring."""
    rows = read_rows("default")
    rnd = random.Random(f"{name}/{seed}")
    kind, _, arg = name.partition("-")
    gpu_rows = [r for r in rows if int(r["num_gpu"]) > 0]
    if kind.startswith("pin"):
        share = int(kind[3:]) / 100
        for r in gpu_rows:
            if rnd.random() < share:
                r["gpu_spec"] = arg
    elif kind.startswith("spec"):
        share = int(kind[4:]) / 100
        specs = [r["gpu_spec"] for r in read_rows("gpuspec25") if r["gpu_spec"]]
        for r in gpu_rows:
            if rnd.random() < share:
                r["gpu_spec"] = rnd.choice(specs)
    elif kind.startswith("share"):
        share = int(kind[5:]) / 100
        fractions = [r["gpu_milli"] for r in gpu_rows if int(r["gpu_milli"]) < 1000]
        for r in gpu_rows:
            if r["num_gpu"] == "1" and r["gpu_milli"] == "1000" and rnd.random() < share:
                r["gpu_milli"] = rnd.choice(fractions)
    elif kind.startswith("multi"):
        share = int(kind[5:]) / 100
        for r in gpu_rows:
            if r["num_gpu"] == "1" and r["gpu_milli"] == "1000" and rnd.random() < share:
                r["num_gpu"] = str(rnd.choice((2, 2, 2, 4, 4, 8)))
    else:
        raise SystemExit(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    return rows


def write_variant(name: str, folder: Path) -> Path:
    path = folder / f"openb_pod_list_{name.replace('|', '_')}.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(make_variant(name))
    return path


def _job(args: tuple[str, str, str, int]) -> tuple[str, str, float]:
    variant, path, policy, seed = args
    nodes = load_nodes(TRACE_DIR / "openb_node_list_gpu_node.csv")
    result = run_result(nodes, load_pods(Path(path)), policy, seed, tune=1.3)
    return variant, policy, 100.0 - result.alloc_pct["100"]


def seeds_of(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--seeds", default="42-44")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if not TRACE_DIR.is_dir():
        raise SystemExit(f"needs the shared traces in {TRACE_DIR}")
    variants = [v for v in args.variants.split(",") if v]
    seeds = seeds_of(args.seeds)
    results: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [(v, str(write_variant(v, Path(tmp))), p, s) for v in variants for p in ("fgd", "kubegpu")
                for s in seeds]
        with ProcessPoolExecutor(args.workers) as pool:
            for variant, policy, value in pool.map(_job, jobs):
                results.setdefault((variant, policy), []).append(value)
    print(f"unallocated GPU % at 100 % arrival, tune 1.3, seeds {args.seeds} (lower is better)")
    print(f"{'variant':<14} {'fgd':>12} {'kubegpu':>12} {'diff (pp)':>10}")
    for v in variants:
        f, k = results[(v, "fgd")], results[(v, "kubegpu")]
        fm, km = statistics.mean(f), statistics.mean(k)
        sd = (lambda xs: statistics.stdev(xs) if len(xs) > 1 else 0.0)
        print(f"{v:<14} {fm:6.2f} ± {sd(f):4.2f} {km:6.2f} ± {sd(k):4.2f} {km - fm:+10.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
