"""Hostile HTTP requests and hostile --results folders for `kubegpu serve`.

A 64 MiB request header is refused with 431 before it is buffered; non-ASCII digits in ?size=
are a 400; result files that are FIFOs, links to /dev/zero, of the wrong shape or 5,000 levels
deep are listed as problems (never a hang, never a 500), and reading them never stalls /healthz.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import httpx
import pytest

from kubegpu.jsontext import error_body

from .conftest import SRC

RUN = {"scenario": "seed-flapping", "seed": 42, "duration_s": 86400, "cost": {"total": 12.5, "currency": "USD"}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 10.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def hostile_results(folder):
    (folder / "good.json").write_text(json.dumps(RUN))
    os.mkfifo(folder / "fifo.json")
    (folder / "zero.json").symlink_to("/dev/zero")
    for name, params in (("params-list", [1, 2]), ("params-string", "lr=1"), ("params-number", 7)):
        (folder / f"{name}.json").write_text(json.dumps([{"params": params, "seed": 1, "result": RUN}]))
    (folder / "deep.json").write_text('{"scenario": ' + "[" * 5000 + "]" * 5000 + "}")
    (folder / "deep-field.json").write_text(json.dumps({**RUN, "seed": [[[[1]]]], "cost": {"total": {"a": 1}}}))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`kubegpu serve --demo --results DIR` with a hostile results folder, as a subprocess; (base URL, pid)."""
    results = tmp_path_factory.mktemp("hostile-results")
    hostile_results(results)
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.Popen([sys.executable, "-m", "kubegpu.cli.main", "serve", "--demo", "--port", str(port),
                             "--results", str(results)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if get(base + "/healthz", timeout=2)[0] == 200:
                break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("kubegpu serve did not start")
    yield base, proc.pid
    proc.terminate()
    proc.wait(timeout=10)


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def raw_request(port: int, head_filler: int) -> bytes:
    """A GET whose one header is `head_filler` bytes long, sent over a raw socket; the answer's bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: ")
            chunk = b"a" * (1 << 20)
            left = head_filler
            while left > 0:
                s.sendall(chunk[:left])
                left -= len(chunk)
            s.sendall(b"\r\nConnection: close\r\n\r\n")
        except OSError:
            pass  # the server answered and closed while we were still sending: what a cap does
        answer = b""
        while True:
            try:
                data = s.recv(65536)
            except OSError:
                break
            if not data:
                break
            answer += data
    return answer


def test_64_mib_header_is_refused_with_431_without_memory_growth(served):
    base, pid = served
    port = int(base.rsplit(":", 1)[1])
    before = rss_mib(pid)
    answer = raw_request(port, 64 << 20)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert answer.endswith(error_body(431, "request line and headers larger than 16 KiB"))
    assert rss_mib(pid) - before < 20
    assert get(base + "/healthz")[0] == 200  # and the server still answers


def test_header_under_the_cap_is_answered(served):
    base, _ = served
    answer = raw_request(int(base.rsplit(":", 1)[1]), 8 * 1024)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


@pytest.mark.parametrize("path", ["/api/defrag?size=²", "/defrag?size=④", "/api/defrag?size=١", "/defrag?size=𝟙",
                                  "/api/defrag?size=" + "9" * 2000])
def test_non_ascii_digits_in_size_are_a_400(served, path):
    base, _ = served
    status, body = get(base + urllib.parse.quote(path, safe="/?="))
    assert status == 400, body[:300]


def test_hostile_result_files_are_listed_not_fatal(served):
    base, _ = served
    status, body = get(base + "/simulate", timeout=15)
    assert status == 200, body[:500]
    text = body.decode()
    for name in ("fifo.json", "zero.json"):
        assert f"{name}: not a regular file" in text
    assert "deep.json: nested too deeply" in text
    assert "seed-flapping" in text
    assert get(base + "/healthz", timeout=5)[0] == 200


def test_results_are_read_off_the_event_loop(tmp_path, monkeypatch, demo_store):
    """While /simulate reads its folder (here: blocked on purpose), /healthz still answers."""
    from kubegpu.web import pages
    from kubegpu.web.app import create_app

    release = threading.Event()
    started = threading.Event()

    def slow_read(folder):
        started.set()
        release.wait(10)  # a slow disk / 40 large files: blocking work
        return [], []

    monkeypatch.setattr(pages, "read_results", slow_read)
    app = create_app(demo_store, results_dir=str(tmp_path), metrics_ttl=0)

    async def scenario():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            simulate = asyncio.create_task(client.get("/simulate"))
            while not started.is_set():
                await asyncio.sleep(0.01)
            health = await asyncio.wait_for(client.get("/healthz"), 5)
            assert not simulate.done(), "/healthz waited for the results to be read"
            release.set()
            return health.status_code, (await simulate).status_code

    try:
        assert asyncio.run(asyncio.wait_for(scenario(), 20)) == (200, 200)
    finally:
        release.set()


def test_read_results_shapes(tmp_path):
    from kubegpu.web.results import read_results

    hostile_results(tmp_path)
    rows, problems = read_results(str(tmp_path))
    assert {r["params"].__class__ for r in rows} == {dict}
    assert all(isinstance(v, (str, int, float, bool, type(None))) for r in rows for k, v in r.items() if k != "params")
    deep = [r for r in rows if r["file"] == "deep-field.json"]
    assert deep and deep[0]["seed"] is None and deep[0]["cost"] is None
    assert sorted(p.split(":")[0] for p in problems) == ["deep.json", "fifo.json", "zero.json"]


def test_guard_and_handlers_write_the_same_error_body(demo_store):
    from starlette.testclient import TestClient

    from kubegpu.web.app import create_app

    client = TestClient(create_app(demo_store, metrics_ttl=0))
    guard = client.get("/api/why?nope=1")           # refused by the guard
    handler = client.get("/api/defrag?size=0")      # refused by the handler
    for resp in (guard, handler):
        body = resp.json()
        assert resp.content == error_body(resp.status_code, body["error"])
