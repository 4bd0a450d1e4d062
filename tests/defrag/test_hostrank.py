"""The vectorised host ranking equals the per-host definition it replaced, on random clusters
with gangs (units of several pods), pending pods of every size and k-GPU probes."""

import numpy as np
from builders import cluster, gpu_node, pod
from hypothesis import given, settings
from hypothesis import strategies as hs

from kubegpu.defrag.hostrank import lower_bounds
from kubegpu.defrag.planner import pod_targets, probe_target
from kubegpu.defrag.problem import build_problem
from kubegpu.defrag.workstate import WorkState


def _bound_one_host(work, t, n):
    """The definition: units on n largest first (whole GPUs freed, then room in the short columns,
    unit index on ties); pods counted until their room covers the shortfall; 0 = nothing short."""
    prob = work.problem
    units = sorted({int(prob.unit_of[p]) for p in prob.on_node[n] if p not in work.moved})
    short = np.maximum(np.where(t.vec > 0, t.vec - work.free[n], 0), 0)
    slot = (1 - int(work.pods_free[n])) if t.needs_slot else -10**9
    whole = (t.whole - work.whole_free_at(n)) if t.whole else -10**9
    if (short == 0).all() and slot <= 0 and whole <= 0:
        return 0
    rooms = [(u, *prob.room(u, n)) for u in units]
    rooms.sort(key=lambda r: (-r[3], -int(r[1][short > 0].sum()), r[0]))
    vec, slots, wh, pods = np.zeros_like(short), 0, 0, 0
    for u, v, s, w in rooms:
        vec, slots, wh, pods = vec + v, slots + s, wh + w, pods + len(prob.units[u].members)
        if (vec >= short).all() and slots >= slot and wh >= whole:
            return pods
    return -1


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 4), hs.sampled_from([0, 1, 1, 2, 4, 8]), hs.sampled_from(["1", "30", "80"]),
                          hs.integers(0, 2)), min_size=1, max_size=16),
       hs.sampled_from([1, 2, 4, 8]), hs.sampled_from(["1", "60"]), hs.sampled_from([2, 4, 8]), hs.integers(0, 3))
def test_lower_bounds_equal_the_per_host_definition(bound, want, cpu, k, moved):
    objs = [gpu_node(f"n{i}", 8, cpu="96") for i in range(5)]
    for j, (i, g, c, gang) in enumerate(bound):
        labels = {"scheduling.x-k8s.io/pod-group": f"g{gang}"} if gang else None
        objs.append(pod(f"b{j}", f"n{i}", g, cpu=c, labels=labels, controller=f"c{j}"))
    objs.append(pod("want", None, want, cpu=cpu, kind="Job", controller="want"))
    st = cluster(objs)
    problem = build_problem(st)
    work = WorkState.start(problem)
    for unit in problem.units[:moved]:  # as if already moved (units move whole): they no longer count
        for p in unit.members:
            work.moved[p] = int(problem.home[p])
    hosts = np.arange(problem.n)
    for t in (*pod_targets(problem, [st.pod("ml", "want")]), probe_target(problem, k, 1000, "probe")):
        got, biggest = lower_bounds(work, t, hosts)
        assert got.tolist() == [_bound_one_host(work, t, n) for n in hosts]
        for n in hosts:
            units = {int(problem.unit_of[p]) for p in problem.on_node[n] if p not in work.moved}
            assert biggest[n] == max((problem.room(u, n)[2] for u in units), default=0)
