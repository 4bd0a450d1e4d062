"""Hostile requests get a 4xx or an extender Error, never a 500 or a traceback; the server keeps serving."""

from __future__ import annotations

import socket

import httpx
import msgspec
import pytest
from clusters import gpu_pod, gpu_rules_cluster
from loopback import make_extender, serving

GOOD_POD = gpu_pod("one-gpu-9")


@pytest.fixture(scope="module")
def server():
    ext = make_extender(gpu_rules_cluster())
    with serving(ext, max_body=1 << 20) as url:
        yield url, ext


def still_serving(url: str) -> None:
    r = httpx.post(f"{url}/filter", content=msgspec.json.encode({"Pod": GOOD_POD, "NodeNames": ["a100-2"]}))
    assert r.status_code == 200 and r.json()["NodeNames"] == ["a100-2"]


HOSTILE = [
    ("filter", b"{not json"),
    ("filter", b"[]"),
    ("filter", b'{"Pod": {"metadata": {"name": "x"}}, "NodeNames": "a100-2"}'),
    ("filter", b'{"Pod": {"metadata": {"name": "x"}}, "NodeNames": [1, 2]}'),
    ("filter", b'{"Pod": {"metadata": {"name": "x"}}, "Nodes": {"items": [{"metadata": 5}]}}'),
    ("prioritize", b"\xff\xfe garbage"),
    ("prioritize", b'{"Pod": null, "NodeNames": ["a100-2"]}'),
    ("preempt", b'{"Pod": {}, "NodeNameToMetaVictims": {"a100-2": {"Pods": "x"}}}'),
    ("preempt", b"[" * 100_000),
]


@pytest.mark.parametrize("verb, body", HOSTILE)
def test_malformed_bodies_get_400_with_one_json_line(server, verb, body):
    url, _ = server
    r = httpx.post(f"{url}/{verb}", content=body)
    assert r.status_code == 400
    assert set(r.json()) == {"error", "code"} and "Traceback" not in r.text
    still_serving(url)


@pytest.mark.parametrize("pod", [
    7,
    None,
    "a pod",
    {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}},
    {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1e400"}}}]}},
    {"metadata": {"name": "x"}, "spec": {"containers": "nope"}},
    {"metadata": {}, "spec": {}},
    {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "-3"}}}]}},
])
def test_unreadable_pods_are_an_extender_error_on_filter_and_400_elsewhere(server, pod):
    url, _ = server
    body = msgspec.json.encode({"Pod": pod, "NodeNames": ["a100-2"]})
    r = httpx.post(f"{url}/filter", content=body)
    assert r.status_code == 200 and r.json()["Error"].startswith("kubegpu: ")
    assert httpx.post(f"{url}/prioritize", content=body).status_code == 400
    still_serving(url)


def test_5000_unknown_node_names_is_an_error_string(server):
    url, _ = server
    body = msgspec.json.encode({"Pod": GOOD_POD, "NodeNames": [f"ghost-{i}" for i in range(5000)]})
    r = httpx.post(f"{url}/filter", content=body)
    assert r.status_code == 200 and "none of the 5000 nodes" in r.json()["Error"]
    r = httpx.post(f"{url}/prioritize", content=body)
    assert r.status_code == 200 and {h["Score"] for h in r.json()} == {0}
    still_serving(url)


def test_a_50mb_body_is_refused_413_before_it_is_read(server):
    url, _ = server
    r = httpx.post(f"{url}/filter", content=b"x" * (50 << 20))
    assert r.status_code == 413
    still_serving(url)


def test_a_chunked_body_past_the_limit_is_refused(server):
    url, _ = server

    def chunks():
        for _ in range(64):
            yield b"y" * (64 << 10)

    r = httpx.post(f"{url}/filter", content=chunks())
    assert r.status_code == 413
    still_serving(url)


def test_wrong_methods_and_paths(server):
    url, _ = server
    assert httpx.get(f"{url}/filter").status_code == 405
    assert httpx.post(f"{url}/bind", content=b"{}").status_code == 404
    assert httpx.delete(f"{url}/healthz").status_code == 405
    still_serving(url)


def test_a_client_that_hangs_up_mid_body_does_not_stop_the_server(server):
    url, _ = server
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"Pod\":")
    still_serving(url)


def test_keep_alive_calls_with_large_bodies_are_not_mistaken_for_large_heads(server):
    # kube-scheduler reuses its connection; a 5,000-name body arrives in the same reads as the
    # next request's head, and only the head counts against the 16 KiB cap
    url, _ = server
    body = msgspec.json.encode({"Pod": GOOD_POD, "NodeNames": ["a100-2"] + [f"gone-{i}" for i in range(5000)]})
    with httpx.Client() as client:
        for _ in range(4):
            r = client.post(f"{url}/filter", content=body)
            assert r.status_code == 200 and r.json()["NodeNames"] == ["a100-2"]


def test_a_head_past_16_kib_is_refused_with_431(server):
    url, _ = server
    r = httpx.post(f"{url}/filter", content=b"{}", headers={"X-Big": "x" * (20 << 10)})
    assert r.status_code == 431 and r.json()["code"] == 431
    still_serving(url)
