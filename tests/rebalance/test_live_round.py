"""Rebalance rounds against the suite's API server: reserve, then move, and clean up on every way out."""

from __future__ import annotations



def test_a_round_makes_room_and_the_waiting_pod_is_bound(live):
    reb = live.rebalancer()
    report = reb.round()
    assert report.status == "moved", report.message
    plan = report.plans[0]
    assert plan.target == "ml/big" and plan.status == "done", plan.reason
    assert all(m.outcome == "moved" for m in plan.moves) and len(plan.moves) == 3
    live.scheduler.tick()
    big = live.pod_body("ml", "big")
    assert big["spec"].get("nodeName") == plan.moves[0].from_
    # every replacement runs, each one preempted a placeholder
    assert len(live.scheduler.preemptions) == 3
    assert all(v.startswith("kubegpu/kubegpu-hold-") for p in live.scheduler.preemptions for v in p.victims)
    # an Event on each moved pod, before its eviction
    moved = {m.pod.split("/")[1] for m in plan.moves}
    assert {e["regarding"]["name"] for e in live.scheduler.events} == moved
    assert all(e["reason"] == "Rebalancing" and e["reportingController"] == "kubegpu.io/rebalance"
               for e in live.scheduler.events)
    # metrics
    m = reb.metrics
    assert m.moves["moved"] == 3 and m.reservations_held == 0 and m.gpu_hours_lost == plan.gpu_hours_lost
    assert m.stranded_before == report.stranded["before"] and m.rounds == {"moved": 1}
    live.assert_clean()


def test_metrics_are_served_and_pass_promtool(live, tmp_path):
    import shutil
    import subprocess
    import urllib.request

    from kubegpu.rebalance.metrics import MetricsServer

    reb = live.rebalancer()
    reb.round()
    server = MetricsServer(reb.metrics, "127.0.0.1", 0).start()
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5).read().decode()
    finally:
        server.stop()
    assert 'kubegpu_rebalance_moves_total{outcome="moved"} 3' in text
    assert 'kubegpu_rebalance_stranded_gpus{when="before"}' in text and "kubegpu_rebalance_reservations_held 0" in text
    assert 'kubegpu_rebalance_rounds_total{status="moved"} 1' in text
    if shutil.which("promtool"):
        out = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr


def test_a_replacement_that_lands_elsewhere_is_counted_and_its_unused_placeholder_deleted(tmp_path):
    from builders import gpu_node, pod
    from liveworld import start_live_world

    pinned = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
    extra = [gpu_node("side", 8)] + [pod(f"s-{j}", "side", 1, controller="side", annotations=pinned)
                                      for j in range(7)]
    world = start_live_world(tmp_path, extra=extra)
    try:
        report = world.rebalancer().round()
        plan = report.plans[0]
        outcomes = sorted(m.outcome for m in plan.moves)
        planned = {m.to for m in plan.moves}
        landed = {m.replacement.rsplit("@", 1)[1] for m in plan.moves}
        if "side" in planned:  # the planner held "side" itself: the free slot left is another node
            assert outcomes.count("elsewhere") == 1, outcomes
        else:
            assert "side" in landed and outcomes == ["elsewhere", "moved", "moved"], outcomes
        assert report.status == "moved"
        world.scheduler.tick()
        assert world.pod_body("ml", "big")["spec"].get("nodeName") == plan.moves[0].from_
        world.assert_clean()
    finally:
        world.server.stop()


def test_a_placeholder_that_cannot_be_placed_stops_the_round_before_any_eviction(tmp_path):
    from builders import pod
    from liveworld import start_live_world

    world = start_live_world(tmp_path)
    taken = {"done": False}

    def someone_takes_the_room(request):
        if request.method == "POST" and request.path == "/api/v1/namespaces/kubegpu/pods" and not taken["done"]:
            import json

            body = json.loads(request.body)
            node = body["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
                "nodeSelectorTerms"][0]["matchExpressions"][0]["values"][0]
            taken["done"] = True
            world.server.add(pod("intruder", node, 1, controller="intruder", priority=5))
        return None

    world.server.faults.append(someone_takes_the_room)
    try:
        report = world.rebalancer(reserve_timeout_s=10.0).round()
        plan = report.plans[0]
        assert plan.status == "failed" and "could not" not in plan.reason
        assert "not placed within 10 s" in plan.reason and "nothing was evicted" in plan.reason
        assert report.status == "failed"
        assert world.cluster.evictions == [] and world.cluster.cordon_patches == []
        assert all(m.outcome == "not-run" for m in plan.moves)
        events = [json_event for json_event in _journal_events(plan.journal)]
        assert "reserve-failed" in events and "evict-request" not in events and "cordon-request" not in events
        world.assert_clean()
    finally:
        world.server.stop()


def test_a_pdb_that_turns_strict_mid_round_stops_after_the_first_move(tmp_path):
    from builders import pdb
    from liveworld import start_live_world

    world = start_live_world(tmp_path, extra=[pdb("svc0", {"app": "svc-0"}, max_unavailable=3)])
    world.cluster.reconcile()

    def strict_after_first_eviction(request):
        if request.path.endswith("/eviction") and world.cluster.evictions:
            from apiserver.wire import ObjectKey

            body = world.server.store[ObjectKey("policy/v1", "poddisruptionbudgets", "ml", "svc0")]
            body["spec"] = {"selector": body["spec"]["selector"], "minAvailable": 7}
            world.cluster.reconcile()
        return None

    world.server.faults.append(strict_after_first_eviction)
    try:
        report = world.rebalancer().round()
        plan = report.plans[0]
        assert plan.status == "stopped" and "disruption budget" in plan.reason, plan.reason
        assert [m.outcome for m in plan.moves] == ["moved", "not-run", "not-run"]
        assert len(world.cluster.evictions) == 1
        assert report.status == "moved"  # one pod moved; the plan stopped before the next
        world.assert_clean()
    finally:
        world.server.stop()


def _journal_events(path):
    import json
    from pathlib import Path

    return [json.loads(line)["event"] for line in Path(path).read_text().splitlines()]


def test_room_taken_mid_round_stops_before_the_next_eviction(tmp_path):
    from liveworld import start_live_world

    world = start_live_world(tmp_path)

    def take_a_placeholder_after_the_first_eviction(request):
        if request.method == "GET" and len(world.cluster.evictions) == 1 and not taken:
            from apiserver.wire import ObjectKey
            from builders import pod

            holds = sorted((p["metadata"]["name"], p["spec"]["nodeName"]) for p in world.placeholders()
                           if p["spec"].get("nodeName"))
            name, node = holds[-1]
            world.server.store.pop(ObjectKey("v1", "pods", "kubegpu", name))   # a higher-priority pod preempted it
            world.server.add(pod("urgent", node, 1, controller="urgent", priority=1000))
            taken.append(name)
        return None

    taken: list[str] = []
    world.server.faults.append(take_a_placeholder_after_the_first_eviction)
    try:
        report = world.rebalancer().round()
        plan = report.plans[0]
        assert taken and plan.status == "stopped" and "no longer held" in plan.reason, plan.reason
        assert len(world.cluster.evictions) == 1
        assert [m.outcome for m in plan.moves].count("not-run") == 2
        world.assert_clean()
    finally:
        world.server.stop()


def test_an_api_server_failure_fails_the_round_cleanly_and_the_next_round_finishes(live):
    from apiserver.wire import status_reply

    left = {"n": 1}

    def fail_the_second_eviction(request):
        if request.path.endswith("/eviction") and live.cluster.evictions and left["n"]:
            left["n"] -= 1
            return status_reply(500, "InternalError", "etcd is down")
        return None

    live.server.faults.append(fail_the_second_eviction)
    reb = live.rebalancer()
    first = reb.round()
    assert first.plans[0].status == "stopped" and "etcd is down" in first.plans[0].reason
    assert not live.placeholders() and not live.cordoned()
    second = reb.round()           # resumes nothing (the first run finished its journal): plans again
    assert second.status == "moved", second.message
    live.scheduler.tick()
    assert live.pod_body("ml", "big")["spec"].get("nodeName")
    live.assert_clean()
