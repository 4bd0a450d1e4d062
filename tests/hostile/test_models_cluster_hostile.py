"""Hostile ModelCache objects and an unreachable API for `models plan`, `agent` and `controller`.

A status written by someone else (a list, a string, text or NaN bytes), absurd fan-out, huge
manifests and zero throughputs are one line and exit 2; an API blip is retried with back-off
in loop mode (never a crash loop); a heartbeat from the future does not hold a pull slot.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from kubegpu.errors import SourceError
from kubegpu.modelcache.agent import MAX_CLOCK_SKEW_SECONDS, slots_taken
from kubegpu.modelcache.controller import Controller, run as run_controller
from kubegpu.modelcache.kube import KubeEdge
from kubegpu.modelcache.loop import retry_delay
from kubegpu.modelcache.spec import decode_cache

from inprocess import run_inprocess
from .conftest import SRC

SHA = "a" * 64


def cache_body(status=None, **spec):
    body = {"apiVersion": "kubegpu.io/v1alpha1", "kind": "ModelCache", "metadata": {"name": "llama"},
            "spec": {"version": "v2", "files": [{"path": "w.bin", "size": 10**9, "sha256": SHA}],
                     "source": {"path": "/mnt/nfs/llama"}, **spec}}
    if status is not None:
        body["status"] = status
    return body


def write(tmp_path, body, name="cache.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(body) if name.endswith(".yaml") else json.dumps(body))
    return str(path)


def refused(result, *needles):
    assert result.code == 2 and len(result.err_lines) == 1, result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


@pytest.mark.parametrize("status, field", [
    ({"nodes": ["gpu-1"]}, "status.nodes"),
    ({"nodes": "gpu-1"}, "status.nodes"),
    ({"nodes": {"gpu-1": "Verified"}}, "status.nodes.gpu-1"),
    ({"nodes": {"gpu-1": {"state": "Downloading", "version": "v2", "bytesDone": "lots"}}},
     "status.nodes.gpu-1.bytesDone"),
    ({"nodes": {"gpu-1": {"state": "Downloading", "version": "v2", "bytesDone": float("nan")}}},
     "status.nodes.gpu-1.bytesDone"),
    ({"nodes": {"gpu-1": {"state": "Downloading", "version": "v2", "bytesDone": -5}}},
     "status.nodes.gpu-1.bytesDone"),
])
def test_plan_with_a_status_of_the_wrong_shape_is_one_line(tmp_path, status, field):
    refused(run_inprocess("models", "plan", "--cache", write(tmp_path, cache_body(status)), "--demo"),
            "ModelCache/llama", f"field {field}")


def test_plan_with_a_trillion_pull_slots_answers(tmp_path):
    result = run_inprocess("models", "plan", "--cache", write(tmp_path, cache_body(fanOut={"maxNodesPulling": 10**12}),
                                                              "c.json"), "--demo", "-o", "json")
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["max_nodes_pulling"] == 10**12


def test_plan_of_30000_files_finishes(tmp_path):
    """The issue's bound: 30,000 files in under 20 s (it took minutes: the path checks were quadratic)."""
    files = [{"path": f"shard-{i // 1000}/f{i}.bin", "size": 1000 + i, "sha256": SHA} for i in range(30_000)]
    path = write(tmp_path, cache_body(files=files), "c.json")
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "models", "plan", "--cache", path, "--demo",
                           "-o", "json"], capture_output=True, text=True, timeout=20, env=env)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("args", [["--class", "nfs=0GB/s"], ["--class", "object-store=0.0MB/s"], ["--figures", "FIGURES"]])
def test_zero_throughput_is_refused_not_divided_by(tmp_path, args):
    figures = tmp_path / "figures.json"
    figures.write_text(json.dumps({"throughputs": {"nfs": 0}}))
    args = [str(figures) if a == "FIGURES" else a for a in args]
    result = run_inprocess("models", "plan", "--cache", write(tmp_path, cache_body()), "--demo", *args)
    assert result.code == 2 and len(result.err_lines) == 1, result.stderr
    assert "nfs" in result.stderr or "object-store" in result.stderr


# -- heartbeats from the future -----------------------------------------------------------------------

def downloading(at: datetime) -> dict:
    return {"state": "Downloading", "version": "v2", "updatedAt": at.strftime("%Y-%m-%dT%H:%M:%SZ")}


def test_heartbeat_dated_far_in_the_future_does_not_hold_a_slot_and_is_reported():
    cache = decode_cache(cache_body())
    now = datetime.now(timezone.utc).replace(microsecond=0)
    said: list[str] = []
    far = {"gpu-2": downloading(now + timedelta(days=365))}
    assert slots_taken(cache, far, "gpu-1", now, said.append) == 0
    assert len(said) == 1 and "clock skew" in said[0] and "gpu-2" in said[0]
    # within the skew bound a report ahead of our clock is fresh; a day later it is stale like any other
    near = {"gpu-2": downloading(now + timedelta(seconds=MAX_CLOCK_SKEW_SECONDS / 2))}
    assert slots_taken(cache, near, "gpu-1", now) == 1
    assert slots_taken(cache, near, "gpu-1", now + timedelta(days=1)) == 0


# -- an API that does not answer ----------------------------------------------------------------------

def refused_kubeconfig(tmp_path) -> str:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return str(path)


def test_refused_connection_is_a_source_error_naming_the_call(tmp_path):
    edge = KubeEdge.connect(refused_kubeconfig(tmp_path))
    with pytest.raises(SourceError, match="list nodes: cannot reach .*connection refused"):
        edge.list_nodes()


@pytest.mark.parametrize("command", [["agent", "--node", "gpu-1"], ["controller"]])
def test_once_against_a_refused_api_is_one_line_exit_2(tmp_path, command):
    refused(run_inprocess("models", *command, "--once", "--kubeconfig", refused_kubeconfig(tmp_path)),
            "connection refused")


class _Stop(Exception):
    pass


class FlakyEdge:
    """An API that refuses the first `failures` turns, then answers with an empty cluster."""

    def __init__(self, failures: int) -> None:
        self.failures = failures

    def list_nodes(self):
        if self.failures:
            self.failures -= 1
            raise SourceError("list nodes: cannot reach http://127.0.0.1:1: connection refused")
        return []

    def list_caches(self):
        return []


def test_controller_loop_retries_an_unreachable_api_with_back_off():
    said: list[str] = []
    slept: list[float] = []

    def sleep(seconds):
        slept.append(seconds)
        if len(slept) == 6:
            raise _Stop

    with pytest.raises(_Stop):
        run_controller(Controller(FlakyEdge(4), log=said.append), once=False, interval=3.0, sleep=sleep)
    assert slept == [1, 2, 3, 3, 3.0, 3.0]  # back-off capped at the interval, then the normal turns
    assert sum("retrying in" in line for line in said) == 4
    assert any("answers again after 4 failed turns" in line for line in said)


def test_retry_delay_doubles_and_is_capped():
    assert [retry_delay(n, 30) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert retry_delay(10_000, 30) == 30


def test_agent_loop_keeps_running_when_the_api_refuses(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", "models", "agent", "--node", "gpu-1",
                             "--interval", "1", "--kubeconfig", refused_kubeconfig(tmp_path)],
                            env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}, stderr=subprocess.PIPE, text=True)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=4)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "retrying in 1 s" in err and "Traceback" not in err, err


def test_every_lightkube_client_honours_kubegpu_timeout(tmp_path, monkeypatch):
    from kubegpu.sources.kubeconfig import lightkube_client

    monkeypatch.setenv("KUBEGPU_TIMEOUT", "2.5")
    client = lightkube_client(refused_kubeconfig(tmp_path))
    assert client._client._client.timeout.read == 2.5
    assert client._client._client.timeout.connect == 2.5


@pytest.mark.parametrize("spec, field", [
    ({"retry": {"backoffSeconds": float("inf"), "maxBackoffSeconds": float("inf")}}, "spec.retry"),
    ({"retry": {"backoffSeconds": float("nan")}}, "spec.retry"),
    ({"readiness": {"maxMixedSeconds": float("nan")}}, "spec.readiness.maxMixedSeconds"),
])
def test_back_off_and_bounds_that_are_not_finite_are_one_line(tmp_path, spec, field):
    refused(run_inprocess("models", "plan", "--cache", write(tmp_path, cache_body(**spec)), "--demo"),
            f"field {field}")
