"""The modelled rebalancer plans as `kubegpu defrag --for` / `kubegpu rebalance` do: the fewest moves on any host
(not only the hosts closest to fitting), then the least work lost, destinations by tightest fit
(defrag/workstate.DestScore), at most 2 reservations per node (budget.PER_NODE_DEFAULT, Koordinator's
migration default), one plan per waiting shape, no planning again while nothing changed.

Each test lays pods out by hand on a small cluster and runs one round (`SimRebalancer.run_once`)."""

from __future__ import annotations

import pytest

from kubegpu.placement.task import Placement, Task
from kubegpu.simulate.engine import Engine
from kubegpu.simulate.workload import Job, Selector

from .scenario_helpers import run, scenario

GIB = 1 << 30
POOL = Selector((("pool", "gpu"),))


def cluster(nodes: int, gpus: int = 4, **rebalancer):
    group = {"cpu": 96, "memory": "1152Gi", "gpus": gpus, "gpu_model": "A100", "labels": {"pool": "gpu"},
             "min": nodes, "max": nodes, "initial": nodes, "autoscaled": False, "price_per_hour": 20}
    return scenario(duration="12h", cluster__scheduler_policy="least-allocated", cluster__node_groups={"gpu": group},
                    autoscaler={}, rebalancer={"enabled": True, **rebalancer})


def job(name: str, gpus: int, *, safe: bool = True, ckpt: float = 0.0) -> Job:
    cls = name.rstrip("0123456789")   # one Task per class, as a generator makes them (jobs of a class share a lane)
    return Job(id=-1, name=name, cls=cls, submit=0.0, work=36000.0, selector=POOL,
               task=Task(cpu_milli=4000, mem_bytes=8 * GIB, num_gpu=gpus, gpu_milli=1000 if gpus else 0, name=cls),
               safe_to_evict=safe, checkpoint_interval=ckpt)


class Layout:
    """An engine with pods bound where the test says, and pending jobs the scheduler already tried."""

    def __init__(self, sc, running: list[tuple[Job, int, tuple[int, ...], float]], pending: list[Job]) -> None:
        self.engine = e = Engine(sc, [r[0] for r in running] + pending, record_events=True)
        for j, node, devices, started in running:
            e.now = started
            e.enqueue(j.id)
            where = Placement(node, devices)
            e.state.place(j.task, where)
            e._start(j, e.runs[j.id], [where])
        e.now = 0.0
        for j in pending:
            e.enqueue(j.id)
            e.lane_failed_at[e.lane_of[j.id]] = 0.0
        self.rebalancer = e.rebalancer

    def round(self, at: float = 900.0) -> list[dict]:
        self.engine.now = at
        self.rebalancer.run_once(at)
        return [ev for ev in self.engine.log if ev["event"] == "rebalance-move"]

    def node_of(self, name: str) -> int:
        e = self.engine
        j = next(j for j in e.jobs if j.name == name)
        return e.runs[j.id].placements[0][0]


def test_a_host_beyond_the_eight_closest_to_fitting_is_found():
    # ten nodes are one GPU short, but a pod that may not be evicted holds it; two nodes are two short, of movable pods
    running = [(job(f"pinned{i}", 1, safe=False), i, (0,), 0.0) for i in range(10)]
    running += [(job(f"sweep{k}", 1), 10 + k // 2, (k % 2,), 0.0) for k in range(4)]
    lay = Layout(cluster(12), running, [job("big", 4)])
    moves = lay.round()
    assert len(moves) == 2
    assert lay.engine.runs[lay.engine.jobs[-1].id].status == "running"
    assert lay.node_of("big") in (10, 11)


def test_destinations_are_the_tightest_fit_not_the_scheduler_spread():
    # node 0: one movable pod (the host); node 1 has 2 GPUs free, node 2 has 3: least-allocated would pick node 2,
    # defrag's DestScore keeps the bigger hole and picks node 1
    running = [(job("sweep0", 1), 0, (0,), 0.0), (job("pinned0", 2, safe=False), 1, (0, 1), 0.0),
               (job("pinned1", 1, safe=False), 2, (0,), 0.0)]
    lay = Layout(cluster(3), running, [job("big", 4)])
    moves = lay.round()
    assert [m["to"] for m in moves] == ["gpu-1"]
    assert lay.node_of("big") == 0


@pytest.mark.parametrize("per_node, expected", [(2, 3), (1, 0), (3, 3)])
def test_at_most_max_moves_per_node_reservations_on_one_destination(per_node, expected):
    # the host (node 0) holds three movable 1-GPU pods; nodes 1 and 2 have 3 GPUs free each
    running = [(job(f"sweep{k}", 1), 0, (k,), 0.0) for k in range(3)]
    running += [(job("pinned0", 1, safe=False), 1, (0,), 0.0), (job("pinned1", 1, safe=False), 2, (0,), 0.0)]
    lay = Layout(cluster(3, **{"max-moves-per-node": per_node}), running, [job("big", 4)])
    moves = lay.round()
    assert len(moves) == expected
    per_destination = {to: sum(m["to"] == to for m in moves) for to in {m["to"] for m in moves}}
    assert all(n <= per_node for n in per_destination.values())
    if per_node == 3:
        assert per_destination == {"gpu-1": 3}   # without the budget the tightest fit takes all three


def test_equal_moves_the_host_with_less_work_lost_goes_first():
    # both hosts need one move; the pod on node 0 has run 2 h without a checkpoint, the one on node 1 for 5 min
    running = [(job("old0", 1), 0, (0,), -7200.0), (job("new0", 1), 1, (0,), 600.0),
               (job("pinned0", 2, safe=False), 2, (0, 1), 0.0)]
    lay = Layout(cluster(3), running, [job("big", 4)])
    moves = lay.round()
    assert [m["job"] for m in moves] == ["new0"]
    assert lay.rebalancer.summary()["gpu_hours_lost"] == pytest.approx(300 / 3600, abs=1e-3)


def test_a_moved_pod_adds_no_wait_sample():
    running = [(job("sweep0", 1), 0, (0,), 0.0), (job("pinned0", 2, safe=False), 1, (0, 1), 0.0)]
    lay = Layout(cluster(2), running, [job("big", 4)])
    assert len(lay.round()) == 1
    waits = lay.engine.stats.waits
    assert len(waits["sweep"]) == 1 and waits["big"] == [900.0]


def test_one_plan_per_waiting_shape_and_none_again_until_the_cluster_changes():
    # every node full of pods that may not move: 30 waiting 4-GPU jobs of one shape share one (failed) plan
    running = [(job(f"pinned{i}", 2, safe=False), i, (0, 1), 0.0) for i in range(4)]
    pending = [job(f"big{i}", 4) for i in range(30)]
    lay = Layout(cluster(4), running, pending)
    assert lay.round(900.0) == [] and lay.rebalancer.plans_made == 1
    assert lay.round(1200.0) == [] and lay.rebalancer.plans_made == 1      # nothing changed: not planned again
    e = lay.engine
    e.now = 1300.0
    e.release(0)                                                            # a pod left: plan again
    e.runs[0].status = "done"
    lay.round(1500.0)
    assert lay.rebalancer.plans_made == 2


def test_a_pending_gang_gets_a_host_for_every_member():
    # a 2-pod gang of 4-GPU pods (all-or-nothing): nodes 0 and 1 each hold one movable pod, node 2 has room for both
    running = [(job("sweep0", 1), 0, (0,), 0.0), (job("sweep1", 1), 1, (0,), 0.0),
               (job("pinned0", 2, safe=False), 2, (0, 1), 0.0)]
    gang = job("gang", 4)
    gang.pods = 2
    lay = Layout(cluster(3), running, [gang])
    moves = lay.round()
    assert sorted(m["job"] for m in moves) == ["sweep0", "sweep1"] and {m["to"] for m in moves} == {"gpu-2"}
    e = lay.engine
    assert e.runs[gang.id].status == "running"
    assert sorted(node for node, _ in e.runs[gang.id].placements) == [0, 1]


def test_a_gang_whose_second_member_finds_no_room_moves_nothing():
    # only node 0 can be cleared (node 1's pod may not move): the round must not move anything for half a gang
    running = [(job("sweep0", 1), 0, (0,), 0.0), (job("pinned0", 1, safe=False), 1, (0,), 0.0),
               (job("pinned1", 2, safe=False), 2, (0, 1), 0.0)]
    gang = job("gang", 4)
    gang.pods = 2
    lay = Layout(cluster(3), running, [gang])
    assert lay.round() == []
    e = lay.engine
    assert e.state.gpu_free.tolist() == [3000, 3000, 2000]   # every what-if undone
    # the what-ifs placed and removed pods, but nothing really changed: the next round does not plan again
    assert lay.round(1200.0) == [] and lay.rebalancer.plans_made == 1


def _mix(scale: float) -> list[dict]:
    """The week-1000-spread mix (1/2/4/8-GPU pods and 2 x 8-GPU gangs), its rates times `scale`."""
    def gen(name, gpus, rate, median, ckpt, **extra):
        return {"kind": "poisson", "name": name, "rate_per_hour": rate * scale, "median_duration": median,
                "sigma": 1.2, "checkpoint_interval": ckpt, "restart_overhead": "5m",
                "pod": {"gpus": gpus, "cpu": 8 * gpus, "memory": f"{96 * gpus}Gi", "priority_class": "low",
                        "node_selector": {"pool": "gpu"}}, **extra}
    return [gen("gpu1", 1, 190, "30m", "30m"), gen("gpu2", 2, 27, "1h", "30m"), gen("gpu4", 4, 27, "1h", "30m"),
            gen("gpu8", 8, 22, "2h", "1h"), gen("gang16", 8, 5.4, "2h", "1h", gang_pods={"2": 1})]


@pytest.mark.parametrize("budget", [{"max-moves": 2}, {"max-gpu-hours-lost-per-day": 1.5}, {"max-gpu-hours-lost": 0.3}])
def test_budgets_hold_over_a_simulated_day(budget):
    group = {"cpu": 96, "memory": "1152Gi", "gpus": 8, "gpu_model": "A100", "labels": {"pool": "gpu"},
             "min": 16, "max": 16, "initial": 16, "autoscaled": False, "price_per_hour": 32}
    sc = scenario(duration="24h", seed=3, cluster__scheduler_policy="least-allocated",
                  cluster__node_groups={"gpu": group}, autoscaler={}, workload__generators=_mix(16 / 250),
                  rebalancer={"enabled": True, **budget})
    engine, out = run(sc)
    moves = [ev for ev in engine.log if ev["event"] == "rebalance-move"]
    assert moves, "the day must give the rebalancer work, or the budget is not exercised"
    per_round: dict[float, int] = {}
    for ev in moves:
        per_round[ev["t"]] = per_round.get(ev["t"], 0) + 1
    assert max(per_round.values()) <= budget.get("max-moves", 6)
    lost_h = out["rebalance"]["gpu_hours_lost"]
    if "max-gpu-hours-lost-per-day" in budget:
        assert lost_h <= budget["max-gpu-hours-lost-per-day"] + 1e-6
    if "max-gpu-hours-lost" in budget:
        assert max(engine.rebalancer.lost_by_round.values()) <= budget["max-gpu-hours-lost"] * 3600 + 1e-6


def test_the_per_node_budget_counts_the_reservations_of_every_gang_member():
    # as the gang test above, but one reservation per node: both moved pods would land on node 2, so no plan
    running = [(job("sweep0", 1), 0, (0,), 0.0), (job("sweep1", 1), 1, (0,), 0.0),
               (job("pinned0", 2, safe=False), 2, (0, 1), 0.0)]
    gang = job("gang", 4)
    gang.pods = 2
    lay = Layout(cluster(3, **{"max-moves-per-node": 1}), running, [gang])
    assert lay.round() == []
    assert lay.engine.runs[gang.id].status == "pending"
