"""Move cost: GPU-hours since the last checkpoint plus restart, from the pod's annotations."""

from datetime import datetime, timezone

from builders import cluster, gpu_node, pod

from kubegpu.defrag.cost import move_cost, parse_duration

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def _cost(**kw):
    st = cluster([gpu_node("n1"), pod("a", "n1", **kw)])
    return move_cost(st, st.pod("ml", "a"), NOW)


def test_durations():
    assert parse_duration("1h30m") == 5400
    assert parse_duration("90") == 90
    assert parse_duration("2x") is None


def test_without_annotation_the_whole_run_is_lost():
    c = _cost(gpus=4, started="2026-12-01T10:00:00Z")
    assert c.lost_seconds == 7200
    assert c.gpu_hours == round(4 * (7200 + 300) / 3600, 4)


def test_last_checkpoint_and_interval():
    c = _cost(gpus=2, started="2026-12-01T06:00:00Z",
              annotations={"kubegpu.io/last-checkpoint": "2026-12-01T11:45:00Z", "kubegpu.io/restart-time": "60s"})
    assert (c.lost_seconds, c.restart_seconds) == (900, 60)
    assert c.gpu_hours == round(2 * 960 / 3600, 4)
    c = _cost(gpus=1, started="2026-12-01T10:50:00Z", annotations={"kubegpu.io/checkpoint-interval": "30m"})
    assert c.lost_seconds == 600  # 70 min run, checkpoints every 30 min: 10 min since the last one


def test_unreadable_annotation_falls_back_to_run_time():
    c = _cost(gpus=1, started="2026-12-01T11:00:00Z", annotations={"kubegpu.io/last-checkpoint": "yesterday"})
    assert c.lost_seconds == 3600 and "unreadable" in c.basis
