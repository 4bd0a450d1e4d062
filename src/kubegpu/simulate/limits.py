"""The most work a scenario or a sweep may ask for, checked before anything runs.

A typo (`1e9` replicas, a `1ms` scan interval, a grid of a million combinations) would otherwise
run until killed. The bounds are generous for real users: 50,000 nodes (ten times the 5,000 that
upstream's scalability tests use), a year of simulated time at cluster-autoscaler's default 10 s
scan interval, two million job arrivals. Each refusal names the file, the field and the bound
(documented in docs/simulate.md, "Limits").
"""

from __future__ import annotations

from typing import Any

from kubegpu.errors import InputError

SEED_MAX = 2**32 - 1               # numpy's seed range, shared with `simulate inflation --seeds`
MAX_SEEDS = 10_000                 # seeds of one `--seeds`
MAX_DURATION_S = 366 * 86400.0     # a run longer than a year is a typo, not a simulation
MAX_NAME_CHARS = 253               # a Kubernetes object name (DNS subdomain): scenario, groups, generators
MAX_DESCRIPTION_CHARS = 10_000
MAX_NODES = 50_000                 # node slots: the sum over groups of max(max, initial)
MAX_GPUS_PER_NODE = 256            # whole GPUs, time-sliced replicas or MIG slices a node advertises
MAX_PODS_PER_NODE = 10_000
MAX_NODE_CPU = 100_000             # cores of one node (or one pod)
MAX_NODE_MEMORY = 2**50            # bytes of one node (or one pod): 1Pi
MAX_REPLICAS = 1_000_000           # base + peak replicas of one inference service
MAX_GANG_PODS = 100_000            # pods of one gang
MAX_JOBS = 2_000_000               # job submissions expected in one run, all generators together
MAX_PODS = 20_000_000              # their pods (jobs x gang size)
MIN_INTERVAL_S = 1.0               # cluster-autoscaler's scan-interval, an inference service's step
MAX_STEPS = 5_000_000              # duration / interval: loops of one periodic controller in a run
MAX_PEAKS_PER_DAY = 1_440          # one peak a minute
MAX_SIGMA = 20.0                   # a log-normal's sigma: e^20 is already 5e8 times the median
MAX_SWEEP_RUNS = 10_000            # (parameter combinations) x (seeds) of one sweep
MAX_SCENARIO_BYTES = 16 << 20      # a scenario or grid file


def refuse(value: Any, bound: Any, what: str, *, where: str, field: str) -> InputError:
    """The error for a value above its bound: names the field, the value and the bound."""
    return InputError(f"{value:,} {what} is more than the {bound:,} kubegpu simulates "
                      "(docs/simulate.md, Limits)", where=where, field=field)


def at_most(value: float, bound: float, what: str, *, where: str, field: str) -> None:
    if value > bound:
        raise refuse(value, bound, what, where=where, field=field)


def check_steps(duration_s: float, interval_s: float, *, where: str, field: str) -> None:
    """A periodic loop: at least MIN_INTERVAL_S apart and at most MAX_STEPS loops in the run."""
    if interval_s < MIN_INTERVAL_S:
        raise InputError(f"{interval_s:g} s is shorter than the {MIN_INTERVAL_S:g} s kubegpu simulates "
                         "(docs/simulate.md, Limits)", where=where, field=field)
    steps = duration_s / interval_s
    if steps > MAX_STEPS:
        raise InputError(f"{steps:,.0f} loops of {interval_s:g} s in the run is more than the {MAX_STEPS:,} kubegpu "
                         "simulates (docs/simulate.md, Limits)", where=where, field=field)
