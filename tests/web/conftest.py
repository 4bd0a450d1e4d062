"""Fixtures for `kubegpu serve`: the demo app in-process, and a real server in a subprocess."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")
# A `kubegpu simulate run -o json` result in the DESIGN §4 shape (what --results DIR holds).
SIMULATE_RUN = {
    "scenario": "seed-flapping", "seed": 42, "duration_s": 86400,
    "autoscaler": {"scale_ups": 7, "scale_downs": 6, "cycles_per_day": 6.0, "node_hours": 50.0,
                   "billed_node_hours": 60.0, "groups": {}},
    "cost": {"total": 1234.5, "currency": "USD", "by_group": {}},
    "pods": {"wait_seconds": {"mean": 10.0, "p95": 99.5, "p99": 120.0}, "by_class": {}},
    "preemption": {"count": 3, "gpu_hours_lost": 1.5},
    "utilization": {"allocation_mean": 0.8, "effective": 0.7},
}


@pytest.fixture(scope="session")
def client(demo_store):
    from starlette.testclient import TestClient

    from kubegpu.web.app import create_app

    return TestClient(create_app(demo_store, metrics_ttl=0), raise_server_exceptions=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer")


@contextmanager
def serving(*args: str):
    """`kubegpu serve ARGS` as a user runs it (a subprocess on a free loopback port); yields its base URL."""
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", "serve", *args, "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + "/readyz", time.monotonic() + 60)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def served_demo(tmp_path_factory):
    """`kubegpu serve --demo --results DIR`; yields its base URL."""
    results = tmp_path_factory.mktemp("results")
    (results / "seed-flapping.json").write_text(json.dumps(SIMULATE_RUN))
    with serving("--demo", "--results", str(results)) as base:
        yield base
