"""Sweeps: every combination of a grid of `--set` values x seeds, on a process pool or a dask cluster.

GRID.yaml maps `--set` keys (and `seed`) to lists of values. Each finished run is appended to a
journal (`runs.ndjson` in the output folder) as soon as it is done, so an interrupted sweep resumes
where it stopped. A run depends only on (scenario, params, seed): where it executed never changes it.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import as_completed as done_first
from typing import Any
from urllib.parse import urlsplit

from kubegpu.errors import InputError, SourceError, UsageError
from kubegpu.simulate import limits
from kubegpu.simulate.results import run_scenario
from kubegpu.simulate.scenario import load_scenario
from kubegpu.simulate.scenario_checks import check_plain, clip, shown
from kubegpu.guards.safe_yaml import load_yaml_file

CONNECT_TIMEOUT_S = 10.0  # reaching a dask scheduler: a port nothing listens on fails at once, a silent host here


def load_grid(path: str) -> tuple[list[dict[str, Any]], list[int] | None]:
    """(parameter combinations in file order, seeds or None) of a grid file; at most MAX_SWEEP_RUNS runs."""
    docs = [d for d in load_yaml_file(path, max_bytes=limits.MAX_SCENARIO_BYTES) if d is not None]
    raw = docs[0] if len(docs) == 1 else None
    if not isinstance(raw, dict) or not raw:
        raise InputError("a grid maps --set keys to lists of values", where=path)
    seeds = None
    axes: dict[str, list] = {}
    for key, values in raw.items():
        field = clip(str(key))
        if not isinstance(key, str) or not key:
            raise InputError(f"key {shown(key)} is not a --set key", where=path)
        if not isinstance(values, list) or not values:
            raise InputError(f"{shown(values)} is not a non-empty list", where=path, field=field)
        check_plain(values, where=path, path=(field,))
        if key == "seed":
            if not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= limits.SEED_MAX for s in values):
                raise InputError(f"{shown(values)}: seeds are whole numbers from 0 to {limits.SEED_MAX}", where=path,
                                 field="seed")
            seeds = list(values)
        else:
            axes[key] = values
    runs = math.prod(len(v) for v in axes.values()) * len(seeds or [1])
    if runs > limits.MAX_SWEEP_RUNS:
        raise limits.refuse(runs, limits.MAX_SWEEP_RUNS, "runs (combinations x seeds)", where=path,
                            field=clip(", ".join(map(str, raw))))
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


def execute(scenario: str, sets: list[str], points: list[tuple[dict, int]], *, done_rows: list[dict],
            record: Callable[[dict], None], workers: int, address: str | None,
            on_done: Callable[[], None] = lambda: None) -> list[dict]:
    """Run the points not done yet (`done_rows`, from the journal), `record` each as it ends; rows in plan order."""
    done = {point_key(r["params"], r["seed"]): r for r in done_rows}
    todo = [(p, s) for p, s in points if point_key(p, s) not in done]
    for _ in range(len(points) - len(todo)):
        on_done()
    for row in _run_all(scenario, sets, todo, workers=workers, address=address):
        done[point_key(row["params"], row["seed"])] = row
        record(row)
        on_done()
    return [done[point_key(p, s)] for p, s in points]


def check_address(address: str) -> tuple[str, int]:
    """(host, port) of a dask scheduler address, `tcp://` or `tls://` (a bare HOST:PORT is tcp, as in dask).

    Parsed here without importing distributed (slow to import), so a wrong address fails at once.
    """
    text = address if "://" in address else f"tcp://{address}"
    try:
        url = urlsplit(text)
        host, port = url.hostname, url.port
    except ValueError as err:
        raise UsageError(f"--address {shown(address)}: not a dask scheduler address like tcp://HOST:8786 ({err})") \
            from None
    if url.scheme not in ("tcp", "tls"):
        raise UsageError(f"--address {shown(address)}: {url.scheme}:// is not supported here (tcp:// or tls://)")
    if not host or port is None or not 0 < port < 65536 or url.path not in ("", "/") or url.query:
        raise UsageError(f"--address {shown(address)}: not a dask scheduler address like tcp://HOST:8786 "
                         "(a host and a port from 1 to 65535)")
    if url.scheme == "tls":
        import dask.config  # lazy: dask is optional and heavy; only a tls:// --address needs it

        tls = dask.config.get("distributed.comm.tls", default={}) or {}
        if not (tls.get("ca-file") and (tls.get("client") or {}).get("cert")):
            raise UsageError(f"--address {shown(address)}: tls:// needs certificates; set distributed.comm.tls.ca-file "
                             "and distributed.comm.tls.client.cert/key in dask's configuration")
    return host, port


def _connect(address: str):
    """A dask Client, or one SourceError line within CONNECT_TIMEOUT_S."""
    from distributed import Client  # lazy: dask is optional and heavy; only --address needs it

    host, port = check_address(address)
    try:  # a plain TCP connect first: "connection refused" at once instead of dask's retries
        _reachable(host, port, CONNECT_TIMEOUT_S)
        return Client(address, timeout=f"{CONNECT_TIMEOUT_S:g}s")
    except (OSError, TimeoutError) as err:
        raise SourceError(f"--address {shown(address)}: cannot reach the dask scheduler within "
                          f"{CONNECT_TIMEOUT_S:g} s: {' '.join(str(err).split()) or type(err).__name__}") from None


def _reachable(host: str, port: int, timeout: float) -> None:
    """Connect once within `timeout` seconds, name lookup included (getaddrinfo has no timeout of its
    own, so it runs in a daemon thread that is abandoned when late); OSError or TimeoutError otherwise."""
    found: list = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as err:
            found.append(err)

    started = time.monotonic()
    thread = threading.Thread(target=lookup, daemon=True)
    thread.start()
    thread.join(timeout)
    if not found:
        raise TimeoutError(f"no answer for the name {host}")
    if isinstance(found[0], OSError):
        raise found[0]
    family, kind, proto, _, where = found[0][0]
    with socket.socket(family, kind, proto) as sock:
        sock.settimeout(max(0.1, timeout - (time.monotonic() - started)))
        sock.connect(where)


def _run_all(scenario: str, sets: list[str], todo: list[tuple[dict, int]], *, workers: int,
             address: str | None) -> Iterable[dict]:
    if not todo:
        return
    if address:
        from distributed import as_completed  # lazy: dask is optional and heavy; only --address needs it

        with _connect(address) as client:
            futures = [client.submit(run_point, scenario, list(sets), p, s, pure=False) for p, s in todo]
            for fut in as_completed(futures):
                yield fut.result()
        return
    if workers <= 1 or len(todo) == 1:
        for p, s in todo:
            yield run_point(scenario, list(sets), p, s)
        return
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
    keys = list(dict.fromkeys(k for r in rows for k in r["params"]))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*keys, "seed", *(name for name, _ in CSV_METRICS)])
    for r in rows:
        w.writerow([*(json.dumps(r["params"].get(k)) if not isinstance(r["params"].get(k), str) else r["params"][k]
                      for k in keys), r["seed"], *(_get(r["result"], path) for _, path in CSV_METRICS)])
    return buf.getvalue()


MAX_PLOT_INCHES = 100  # 10,000 pixels at 100 dpi
MAX_PLOT_LABELS = 80


def comparison_png(rows: list[dict], title: str) -> bytes:
    """Mean cost and p95 wait per parameter combination (over seeds)."""
    import matplotlib  # lazy: matplotlib costs start-up time and only a --plot needs it

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
    fig = Figure(figsize=(min(MAX_PLOT_INCHES, max(6, 1.2 * len(labels) + 2)), 7))
    axes = fig.subplots(3, 1, sharex=True)
    for ax, values, name in zip(axes, (cost, wait, cycles), ("mean cost", "p95 wait (s)", "scale cycles/day")):
        ax.bar(range(len(labels)), values, color="tab:blue")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3, axis="y")
    if len(labels) <= MAX_PLOT_LABELS:
        axes[-1].set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    else:  # too many to read: numbered in results.csv order
        axes[-1].set_xlabel(f"{len(labels):,} parameter combinations, in results.csv order")
    fig.suptitle(title)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()
