"""The live source of `kubegpu serve`: list once, then watches keep the model current; 410 relists;
a failing API server makes the data stale (/readyz 503) while /metrics keeps answering."""

from __future__ import annotations

import copy
import time
from functools import partial

import pytest
from starlette.testclient import TestClient

from apiserver import watch
from apiserver.fixtures import demo_objects
from apiserver.wire import status_reply
from kubegpu.web.app import create_app
from kubegpu.web.store import ModelStore
from kubegpu.web.watch import LiveCache, LiveRefresher


def wait_for(predicate, timeout: float = 20.0, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("condition not reached in time")


@pytest.fixture
def live(apiserver, tmp_path):
    objs = demo_objects()
    for obj in objs:
        try:
            apiserver.add(obj)
        except KeyError:   # kinds the test server does not serve (SnapshotInfo)
            pass
    apiserver.watch_log.hold = 0.3
    config = apiserver.kubeconfig(tmp_path / "kubeconfig")
    store = ModelStore(stale_after=2.0, live=True)
    refresher = LiveRefresher(store, partial(LiveCache, str(config), None), relist_every=3600, debounce=0.2,
                              max_backoff=1.0)
    refresher.start()
    wait_for(lambda: store.views is not None)
    yield apiserver, store, TestClient(create_app(store, metrics_ttl=0))
    refresher.close()


def _free(client) -> float:
    return client.get("/api/frag").json()["gpus"]["free"]


def _pod_lists(server) -> int:
    return sum(1 for r in server.paths() if r.path.endswith("/pods") and "watch" not in r.query)


def test_watch_events_update_the_model_without_relisting(live):
    server, store, client = live
    assert client.get("/readyz").status_code == 200
    before, lists, generation = _free(client), _pod_lists(server), store.generation
    victim = next(o for o in server.objects("v1", "pods") if o["spec"].get("nodeName")
                  and "nvidia.com/gpu" in str(o["spec"]["containers"]))
    watch.delete(server, "v1", "Pod", victim["metadata"]["name"], victim["metadata"]["namespace"])
    wait_for(lambda: _free(client) > before)
    assert _pod_lists(server) == lists                       # the watch carried the change, no relist
    assert store.generation > generation
    watched = [r for r in server.paths() if r.path.endswith("/pods") and r.query.get("watch") == "1"]
    assert watched and all(r.query.get("resourceVersion") for r in watched)   # always resumed from an RV


def test_a_burst_of_changes_is_one_rebuild(live):
    server, store, client = live
    generation = store.generation
    nodes = [o for o in server.objects("v1", "nodes")][:5]
    for node in nodes:
        changed = copy.deepcopy(node)
        changed["spec"]["unschedulable"] = True
        watch.put(server, changed)
    wait_for(lambda: sum(1 for n in client.get("/api/status").json()["nodes"] if not n["schedulable"]) >= 5)
    assert store.generation - generation <= 2                 # debounced: not one rebuild per event


def test_expired_resource_version_relists(live):
    server, store, client = live
    lists = _pod_lists(server)
    watch.compact(server)
    wait_for(lambda: _pod_lists(server) > lists)              # 410 Expired -> list again
    pod = copy.deepcopy(next(o for o in server.objects("v1", "pods") if not o["spec"].get("nodeName")))
    pod["metadata"]["name"] = "arrived-after-compaction"
    pod["metadata"]["uid"] = "5d0c1a52-0000-4000-8000-a22ived0c0mp"   # a new pod has its own uid (same uid: a duplicate)
    watch.put(server, pod)
    wait_for(lambda: any(r["pod"].endswith("/arrived-after-compaction") for r in client.get("/api/why").json()))


def test_failing_api_server_makes_data_stale_then_recovers(live):
    server, store, client = live
    server.faults.append(lambda request: status_reply(500, "InternalError", "etcd is down"))
    wait_for(lambda: client.get("/readyz").status_code == 503, timeout=15)
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert "kubegpu_data_stale 1.0" in metrics.text
    assert "kubegpu_refresh_errors_total 0.0" not in metrics.text
    assert client.get("/api/frag").status_code == 200         # the last good data is still served
    assert "STALE" in client.get("/").text
    server.faults.clear()
    wait_for(lambda: client.get("/readyz").status_code == 200, timeout=30)
    assert "kubegpu_data_stale 0.0" in client.get("/metrics").text


def test_api_server_going_away_and_coming_back(live):
    import threading

    from apiserver.server import _make_handler, _QuietHTTPServer

    server, store, client = live
    port = server._httpd.server_address[1]

    def gone(request):
        raise ConnectionResetError("the API server went away")   # drops open keep-alive connections
    server.faults.append(gone)
    server.stop()                                             # and new connections are refused
    wait_for(lambda: client.get("/readyz").status_code == 503, timeout=15)
    assert "kubegpu_data_stale 1.0" in client.get("/metrics").text
    assert store.health.refresh_errors > 0 and store.health.last_error
    assert client.get("/api/frag").status_code == 200         # the last good data is still served
    server.faults.clear()
    httpd = _QuietHTTPServer(("127.0.0.1", port), _make_handler(server))   # back, same address
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    server._httpd = httpd
    wait_for(lambda: client.get("/readyz").status_code == 200, timeout=30)


def test_hanging_api_server_makes_data_stale_and_metrics_still_answer(live):
    server, store, client = live
    release = __import__("threading").Event()

    def hang(request):
        release.wait(20)                                      # accept, then say nothing
        return None
    server.faults.append(hang)
    try:
        wait_for(lambda: client.get("/readyz").status_code == 503, timeout=15)
        metrics = client.get("/metrics")
        assert metrics.status_code == 200 and "kubegpu_data_stale 1.0" in metrics.text
    finally:
        server.faults.clear()
        release.set()
    wait_for(lambda: client.get("/readyz").status_code == 200, timeout=30)
