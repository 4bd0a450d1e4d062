"""Sweeps: every combination of a grid of `--set` values x seeds, on a process pool or a dask cluster.

GRID.yaml maps `--set` keys (and `seed`) to lists of values. Each finished run is appended to a
journal (`runs.ndjson` in the output folder) as soon as it is done, so an interrupted sweep resumes
where it stopped. A run depends only on (scenario, params, seed): where it executed never changes it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from kubegpu.errors import InputError
from kubegpu.simulate.results import run_scenario
from kubegpu.simulate.scenario import load_scenario

JOURNAL = "runs.ndjson"


def load_grid(path: str) -> tuple[list[dict[str, Any]], list[int] | None]:
    """(parameter combinations in file order, seeds or None) of a grid file."""
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text())
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror}", where=str(p)) from None
    except yaml.YAMLError as err:
        raise InputError(f"not valid YAML: {str(err).splitlines()[0]}", where=str(p)) from None
    if not isinstance(raw, dict) or not raw:
        raise InputError("a grid maps --set keys to lists of values", where=str(p))
    seeds = None
    axes: dict[str, list] = {}
    for key, values in raw.items():
        if not isinstance(values, list) or not values:
            raise InputError(f"{values!r} is not a non-empty list", where=str(p), field=str(key))
        if key == "seed":
            if not all(isinstance(s, int) and not isinstance(s, bool) for s in values):
                raise InputError(f"{values!r}: seeds are whole numbers", where=str(p), field="seed")
            seeds = list(values)
        else:
            axes[str(key)] = values
    combos = [dict(zip(axes, values)) for values in itertools.product(*axes.values())] if axes else [{}]
    return combos, seeds


def point_key(params: dict[str, Any], seed: int) -> str:
    return json.dumps({"params": params, "seed": seed}, sort_keys=True)


def run_point(scenario: str, sets: list[str], params: dict[str, Any], seed: int) -> dict[str, Any]:
    """One sweep run; a plain top-level function so process pools and dask workers can import it."""
    sc = load_scenario(scenario, list(sets), extra={**params, "seed": seed})
    return {"params": params, "seed": seed, "result": run_scenario(sc)}


def plan(scenario: str, sets: list[str], combos: list[dict], seeds: list[int] | None) -> list[tuple[dict, int]]:
    """Every (params, seed), each validated first so a bad grid fails before anything runs."""
    points = []
    for params in combos:
        sc = load_scenario(scenario, list(sets), extra=dict(params))
        for seed in seeds or [sc.spec.seed]:
            points.append((params, seed))
    return points


def read_journal(folder: Path) -> dict[str, dict]:
    done: dict[str, dict] = {}
    path = folder / JOURNAL
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by an interruption: that run is simply redone
            done[point_key(row["params"], row["seed"])] = row
    return done


def execute(scenario: str, sets: list[str], points: list[tuple[dict, int]], *, folder: Path | None,
            workers: int, address: str | None, on_done: Callable[[], None] = lambda: None) -> list[dict]:
    """Run the points not in the journal yet; results in plan order."""
    done = read_journal(folder) if folder else {}
    todo = [(p, s) for p, s in points if point_key(p, s) not in done]
    for _ in range(len(points) - len(todo)):
        on_done()
    journal = open(folder / JOURNAL, "a") if folder else None
    try:
        for row in _run_all(scenario, sets, todo, workers=workers, address=address):
            done[point_key(row["params"], row["seed"])] = row
            if journal:
                journal.write(json.dumps(row) + "\n")
                journal.flush()
            on_done()
    finally:
        if journal:
            journal.close()
    return [done[point_key(p, s)] for p, s in points]


def _run_all(scenario: str, sets: list[str], todo: list[tuple[dict, int]], *, workers: int,
             address: str | None) -> Iterable[dict]:
    if not todo:
        return
    if address:
        from distributed import Client, as_completed

        with Client(address, timeout="30s") as client:
            futures = [client.submit(run_point, scenario, list(sets), p, s, pure=False) for p, s in todo]
            for fut in as_completed(futures):
                yield fut.result()
        return
    if workers <= 1 or len(todo) == 1:
        for p, s in todo:
            yield run_point(scenario, list(sets), p, s)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed as done_first

    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_point, scenario, list(sets), p, s) for p, s in todo]
        for fut in done_first(futures):
            yield fut.result()


CSV_METRICS = (("cycles_per_day", ("autoscaler", "cycles_per_day")), ("scale_ups", ("autoscaler", "scale_ups")),
               ("scale_downs", ("autoscaler", "scale_downs")), ("node_hours", ("autoscaler", "node_hours")),
               ("billed_node_hours", ("autoscaler", "billed_node_hours")), ("cost", ("cost", "total")),
               ("currency", ("cost", "currency")), ("wait_mean_s", ("pods", "wait_seconds", "mean")),
               ("wait_p95_s", ("pods", "wait_seconds", "p95")), ("wait_p99_s", ("pods", "wait_seconds", "p99")),
               ("preemptions", ("preemption", "count")), ("gpu_hours_lost", ("preemption", "gpu_hours_lost")),
               ("allocation_mean", ("utilization", "allocation_mean")), ("effective", ("utilization", "effective")))


def _get(data: dict, path: tuple[str, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def results_csv(rows: list[dict]) -> str:
    import csv
    import io

    keys = list(dict.fromkeys(k for r in rows for k in r["params"]))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*keys, "seed", *(name for name, _ in CSV_METRICS)])
    for r in rows:
        w.writerow([*(json.dumps(r["params"].get(k)) if not isinstance(r["params"].get(k), str) else r["params"][k]
                      for k in keys), r["seed"], *(_get(r["result"], path) for _, path in CSV_METRICS)])
    return buf.getvalue()


def comparison_png(rows: list[dict], title: str) -> bytes:
    """Mean cost and p95 wait per parameter combination (over seeds)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    groups: dict[str, list[dict]] = {}
    for r in rows:
        label = ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in r["params"].items()) or "base"
        groups.setdefault(label, []).append(r["result"])
    labels = list(groups)
    cost = [sum(x["cost"]["total"] for x in g) / len(g) for g in groups.values()]
    wait = [sum(x["pods"]["wait_seconds"]["p95"] for x in g) / len(g) for g in groups.values()]
    cycles = [sum(x["autoscaler"]["cycles_per_day"] for x in g) / len(g) for g in groups.values()]
    fig = Figure(figsize=(max(6, 1.2 * len(labels) + 2), 7))
    axes = fig.subplots(3, 1, sharex=True)
    for ax, values, name in zip(axes, (cost, wait, cycles), ("mean cost", "p95 wait (s)", "scale cycles/day")):
        ax.bar(range(len(labels)), values, color="tab:blue")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3, axis="y")
    axes[-1].set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()
