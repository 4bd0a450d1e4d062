"""Small scenarios built in code for the table tests (each test names the upstream behaviour it pins)."""

from __future__ import annotations

import copy

from kubegpu.simulate.engine import Engine
from kubegpu.simulate.results import summarise
from kubegpu.simulate.scenario import set_path, validate
from kubegpu.simulate.generators import build_jobs

GPU_GROUP = {"cpu": 96, "memory": "1152Gi", "gpus": 8, "gpu_model": "A100", "labels": {"pool": "gpu"},
             "min": 0, "max": 10, "initial": 0, "price_per_hour": 40, "provision_time": "4m",
             "provision_jitter": "0s", "gpu_ready_lag": "0s"}
BASE = {
    "name": "t", "seed": 1, "duration": "6h",
    "cluster": {"scheduler_policy": "most-allocated", "node_groups": {"gpu": GPU_GROUP}},
    "workload": {"priority_classes": {"high": {"value": 1000}, "low": {"value": 0}}, "generators": []},
    "autoscaler": {"provider": "cluster-autoscaler"},
    "billing": {"granularity": "1s"},
}


def scenario(**sets):
    raw = copy.deepcopy(BASE)
    for key, value in sets.items():
        set_path(raw, key.replace("__", "."), value, where="test")
    return validate(raw, source="test.yaml")


def burst(name="burst", *, at="10m", replicas=8, length="30m", gpus=1, priority="high", step="1m"):
    """A service that jumps to `replicas` replicas at `at` for `length`, then back to zero."""
    return {"kind": "inference-peaks", "name": name, "base_replicas": 0, "peak_replicas": replicas,
            "first_peak": at, "period": "24h", "peak_duration": length, "peaks_per_day": 1, "step": step,
            "pod": {"gpus": gpus, "cpu": 1, "memory": "1Gi", "priority_class": priority}}


def run(sc, *, events=True):
    engine = Engine(sc, build_jobs(sc), record_events=events).run()
    return engine, summarise(engine)


def times(engine, kind):
    return [e["t"] for e in engine.log if e["event"] == kind]
