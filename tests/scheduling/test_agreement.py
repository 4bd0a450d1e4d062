"""Agreement between every answer to "does this pod fit / does this node take new pods", on
hypothesis-generated clusters written as v1 objects: taints and tolerations, nodeSelector and node
affinity on the GPU product label, an extended resource, ephemeral storage, host ports, whole-GPU,
time-sliced and MIG nodes, NotReady and cordoned nodes, nodes at their pod limit.

(a) the placement state (frag, simulate) and the frag capacity admit a pod only where the scheduling
    core does, or the difference is one the placement state's docstring names;
(b) status, frag, the GPU map and why agree on which nodes take new pods (why notes the one
    documented exception: a NotReady node without the condition taint);
(c) every move of a `defrag --for` plan lands where the core admits it, and after the plan why says
    the pod fits;
(d) the simulator's preemption picks the victims the core's DefaultPreemption picks.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs
from sched_builders import cluster, node, pod

from kubegpu.defrag import Goal, after_state, plan_defrag
from kubegpu.defrag.problem import replacement_of
from kubegpu.explain.report import explain_pod
from kubegpu.fragmentation.capacity import pods_that_fit
from kubegpu.fragmentation.cluster import cluster_frag_report, cluster_placement, pod_task
from kubegpu.fragmentation.gpumap import gpu_map
from kubegpu.model.nodetable import NodeTable
from kubegpu.scheduling.cycle import filter_pod
from kubegpu.scheduling.nodeready import NOT_READY_UNTAINTED_NOTE
from kubegpu.scheduling.preemption import dry_run
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.simulate.preemption import find_preemption
from kubegpu.simulate.workload import Job, PriorityClass
from kubegpu.status.report import cluster_status

PRODUCT = "nvidia.com/gpu.product"
MODELS = ("NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3")
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
OTHER_TAINT = {"key": "dedicated", "value": "infer", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
FPGA = "example.com/fpga"
MIG = "nvidia.com/mig-3g.40gb"
SHARED = "nvidia.com/gpu.shared"

# Filters the placement state leaves out (its fit_mask docstring), and the resources it does not count.
OMITTED_PLUGINS = {"TaintToleration", "NodeAffinity", "NodePorts", "NodeName", "VolumeRestrictions",
                   "VolumeBinding", "VolumeZone", "NodeVolumeLimits", "PodTopologySpread", "InterPodAffinity",
                   "DynamicResources"}
COUNTED = {"cpu", "memory"}


def make_node(i, kind, model, taint, state, pods, fpga, disk):
    name = f"n{i}"
    labels = {PRODUCT: model} if kind != "cpu" else {}
    n = node(name, cpu="16", memory="64Gi", pods=str(pods), gpus=8 if kind == "whole" else 0,
             labels=labels, taints=[t for t in (GPU_TAINT if taint == "gpu" else OTHER_TAINT if taint == "other"
                                                else None,) if t], unschedulable=state == "cordoned",
             extra={FPGA: "1"} if fpga else None, product=model)
    alloc = n["status"]["allocatable"]
    alloc["ephemeral-storage"] = disk
    if kind == "shared":  # NVIDIA time-slicing, renameByDefault: 2 devices x 4 replicas
        alloc[SHARED] = "8"
        n["metadata"]["labels"].update({"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "2"})
    if kind == "mig":     # MIG mixed strategy: two 3g.40gb slices of one A100
        alloc[MIG] = "2"
        n["metadata"]["labels"].update({"nvidia.com/gpu.count": "1", "nvidia.com/mig.strategy": "mixed"})
    if state == "notready":
        n["status"]["conditions"] = [{"type": "Ready", "status": "Unknown"}]
    return n


nodes_st = hs.lists(hs.tuples(hs.sampled_from(["whole", "whole", "shared", "mig", "cpu"]), hs.sampled_from(MODELS),
                              hs.sampled_from(["none", "none", "gpu", "other"]),
                              hs.sampled_from(["ready", "ready", "ready", "notready", "cordoned"]),
                              hs.integers(1, 4), hs.booleans(), hs.sampled_from(["20Gi", "500Gi"])),
                    min_size=2, max_size=5)
# (node, gpu units of the node's own kind, cpu, host port?, priority)
bound_st = hs.lists(hs.tuples(hs.integers(0, 4), hs.integers(0, 4), hs.integers(0, 8), hs.booleans(),
                              hs.sampled_from([0, 100])), max_size=10)
# (resource kind, units, cpu, memory Gi, tolerate gpu taint, pin: none/selector/affinity, model, fpga, disk Gi, port)
want_st = hs.tuples(hs.sampled_from(["gpu", "gpu", "shared", "mig", "none"]), hs.integers(1, 4), hs.integers(0, 8),
                    hs.integers(0, 16), hs.booleans(), hs.sampled_from(["none", "selector", "affinity"]),
                    hs.sampled_from(MODELS), hs.booleans(), hs.sampled_from([0, 50]), hs.booleans())

RESOURCE = {"whole": "nvidia.com/gpu", "shared": SHARED, "mig": MIG, "cpu": None}


def build(nodes, bound, want, *, want_priority=None, owner=None):
    docs = [make_node(i, *spec) for i, spec in enumerate(nodes)]
    used: dict[int, int] = {}
    count: dict[int, int] = {}
    cpus: dict[int, int] = {}
    for k, (i, units, cpu, port, prio) in enumerate(bound):
        i %= len(nodes)
        if count.get(i, 0) + 1 > nodes[i][4] or cpus.get(i, 0) + cpu > 16:
            continue  # a kubelet admits no more pods than the node holds: the dump is never over-committed
        count[i] = count.get(i, 0) + 1
        cpus[i] = cpus.get(i, 0) + cpu
        res = RESOURCE[nodes[i][0]]
        cap = {"whole": 8, "shared": 8, "mig": 2}.get(nodes[i][0], 0)
        units = min(units, cap - used.get(i, 0)) if res else 0
        used[i] = used.get(i, 0) + units
        docs.append(pod(f"b{k}", node_name=f"n{i}", cpu=str(cpu), memory="1Gi", priority=prio,
                        extra={res: str(units)} if units else None, tolerations=[GPU_TOLERATION],
                        ports=[{"containerPort": 8080, "hostPort": 8080}] if port else None,
                        start=f"2026-11-30T10:{k:02d}:00Z", owner=owner))
    kind, units, cpu, mem, tolerate, pin, model, fpga, disk, port = want
    res = {"gpu": "nvidia.com/gpu", "shared": SHARED, "mig": MIG, "none": None}[kind]
    extra = {res: str(units if kind != "mig" else 1)} if res else {}
    if fpga:
        extra[FPGA] = "1"
    affinity = ({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": PRODUCT, "operator": "In", "values": [model]}]}]}}}
        if pin == "affinity" else None)
    p = pod("want", cpu=str(cpu), memory=f"{mem}Gi", extra=extra or None, priority=want_priority,
            tolerations=[{"operator": "Exists"}] if tolerate == "all" else [GPU_TOLERATION] if tolerate else None,
            node_selector={PRODUCT: model} if pin == "selector" else None, affinity=affinity,
            ports=[{"containerPort": 8080, "hostPort": 8080}] if port else None)
    if disk:
        p["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = f"{disk}Gi"
    docs.append(p)
    return cluster(*docs)


def omitted(outcome, i, state) -> bool:
    """Every core blocker on node i is one the placement state documents as left out."""
    for st in outcome.all_statuses(i):
        if st.plugin in OMITTED_PLUGINS:
            continue
        if st.plugin == "NodeResourcesFit":
            for reason in st.reasons:
                name = reason.removeprefix("Insufficient ")
                offered = state.allocatable[state.nodes[i].name].get(name, 0)
                if reason == "Too many pods" or name in COUNTED:
                    return False
                if name.startswith("nvidia.com/") and offered:
                    return False  # the node serves that GPU resource: the device count must agree
            continue
        return False
    return True


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes_st, bound_st, want_st)
def test_placement_and_frag_capacity_admit_only_where_the_core_does_up_to_documented_omissions(nodes, bound, want):
    st = build(nodes, bound, want)
    pending = st.pod("default", "want")
    outcome = filter_pod(SchedulingSnapshot.from_cluster(st), pending)
    core = outcome.fits
    placement = cluster_placement(st)
    task = pod_task(st, pending)
    mask = placement.fit_mask(task)
    demand = st.gpu_demand(pending)
    for i, n in enumerate(st.nodes):
        if mask[i] and not core[i]:
            assert outcome.prefilter is None and omitted(outcome, i, st), (n.name, outcome.all_statuses(i))
        if core[i] and not mask[i]:
            # documented: NotReady (the one readiness rule; why notes it), and a pending pod's GPU demand is
            # read without a node (a time-sliced share counts as whole devices until bound)
            assert n.reports_not_ready or (demand.is_gpu and nodes[i][0] != "whole"), (n.name, task)
    # frag capacity: a k-whole-GPU pod tolerating everything, asking cpu only (memory is documented as left out)
    k = max(1, want[1])
    probe = build(nodes, bound, ("gpu", k, want[2], 0, True, "none", MODELS[0], False, 0, False))
    probe_pod = probe.pod("default", "want")
    probe_core = filter_pod(SchedulingSnapshot.from_cluster(probe), probe_pod)
    counts = pods_that_fit(cluster_placement(probe), k, want[2] * 1000)
    for i, n in enumerate(probe.nodes):
        tainted_other = nodes[i][2] == "other"
        if counts[i] > 0 and not probe_core.fits[i]:
            assert tainted_other or nodes[i][0] != "whole", (n.name, probe_core.all_statuses(i))
        if probe_core.fits[i] and nodes[i][0] == "whole":
            assert counts[i] > 0 or n.reports_not_ready, n.name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes_st, bound_st)
def test_status_frag_map_and_why_agree_on_which_nodes_take_new_pods(nodes, bound):
    st = build(nodes, bound, ("none", 1, 0, 0, True, "none", MODELS[0], False, 0, False))
    names = [n.name for n in st.nodes]
    status = {r.name for r in cluster_status(st).nodes if r.schedulable}
    placement = cluster_placement(st)
    frag = {placement.names[i] for i in np.flatnonzero(placement.schedulable)}
    gmap = gpu_map(st, cluster_frag_report(st))
    assert status == frag
    assert {m.name for m in gmap.nodes if m.schedulable} == {m.name for m in gmap.nodes} & status
    # why: a tiny pod tolerating the GPU taint; where it fits but the node takes no new pods, a note says why
    report = explain_pod(SchedulingSnapshot.from_cluster(st), st.pod("default", "want"), node_detail=True)
    for v, n in zip(report.nodes, st.nodes):
        noted = v.notes == [NOT_READY_UNTAINTED_NOTE]
        assert noted == (n.reports_not_ready and not any(t.key.startswith("node.kubernetes.io/")
                                                          for t in n.spec.taints)), n.name
        if v.fits and n.name not in status:
            assert noted, (n.name, names)
        if n.name in status and not v.fits:
            assert v.plugin in ("TaintToleration", "NodeResourcesFit", "NodePorts"), (n.name, v.plugin)


defrag_nodes_st = hs.lists(hs.tuples(hs.just("whole"), hs.sampled_from(MODELS), hs.sampled_from(["none", "gpu", "other"]),
                                     hs.sampled_from(["ready", "ready", "ready", "notready", "cordoned"]),
                                     hs.just(12), hs.booleans(), hs.just("500Gi")), min_size=3, max_size=4)


def packed(free: list[int], prios: tuple[int, ...] = (0,)) -> list[tuple]:
    """Bound pods leaving `free[i]` GPUs free on node i (1- and 2-GPU pods, no CPU; priorities in turn)."""
    out = []
    for i, left in enumerate(free):
        used, size = 8 - left, 2
        while used > 0:
            out.append((i, min(size, used), 0, False, prios[len(out) % len(prios)]))
            used -= min(size, used)
            size = 3 - size
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(defrag_nodes_st, hs.sampled_from([2, 4, 4, 8]), hs.lists(hs.integers(0, 7), min_size=4, max_size=4))
def test_every_defrag_move_lands_where_the_core_admits_and_why_then_says_it_fits(nodes, k, free):
    # nodes packed so none has k GPUs free; movable GPU pods (owned by a ReplicaSet, tolerating only the GPU
    # taint) and a k-GPU pod tolerating every taint
    free = [f % k for f in free[: len(nodes)]]
    st = build(nodes, packed(free), ("gpu", k, 1, 1, "all", "none", MODELS[0], False, 0, False),
               owner=("ReplicaSet", "serving"))
    plan = plan_defrag(st, Goal(kind="pod", pod="default/want"), milp_time_limit=2.0, with_frag=False)
    if not plan.feasible or not plan.moves:
        return
    after = after_state(st, plan)
    for move in plan.moves:
        snap = SchedulingSnapshot.from_cluster(after)
        moved = after.pod(*move.pod.split("/", 1))
        snap.remove(moved.key)
        assert filter_pod(snap, replacement_of(moved)).fits[snap.index[move.to]], move
    report = explain_pod(SchedulingSnapshot.from_cluster(after), after.pod("default", "want"))
    assert report.schedulable, report.message


def _sim_inputs(st):
    """The simulator's view of the same cluster: placement state, pods per node with their devices, jobs."""
    table = NodeTable.from_cluster(st)
    state = cluster_placement(st, table)
    jobs, starts, pods_on = [], {}, [dict() for _ in st.nodes]
    index = {n.name: i for i, n in enumerate(st.nodes)}
    for p in st.pods:
        if not p.spec.node_name:
            continue
        j = len(jobs)
        jobs.append(Job(id=j, name=p.key, cls="running", submit=0.0, task=pod_task(st, p),
                        priority=PriorityClass("", st.priority_of(p))))
        starts[(j, 0)] = float(int(p.status.start_time[14:16]))  # distinct minutes: the same order as RFC 3339
        held = table.pod_devices.get(p.key)
        pods_on[index[p.spec.node_name]][(j, 0)] = tuple(np.flatnonzero(held > 0).tolist()) if held is not None else ()
    return state, jobs, starts, pods_on


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hs.lists(hs.integers(0, 7), min_size=2, max_size=4), hs.sampled_from([2, 4, 8]),
       hs.lists(hs.sampled_from([0, 100, 500, 2000]), min_size=1, max_size=5), hs.integers(4, 12))
def test_simulator_preemption_picks_the_cores_victims(free, k, prios, pod_limit):
    """Same cluster (whole-GPU nodes packed so the pod fits nowhere, no taints, no PDBs: the simulator
    models none), same pod of priority 1000; distinct start times (the reprieve order's tie-break)."""
    spec = [("whole", MODELS[0], "none", "ready", pod_limit, False, "500Gi") for _ in free]
    st = build(spec, packed([f % k for f in free], tuple(prios)), ("gpu", k, 0, 0, True, "none", MODELS[0], False, 0,
                                                                   False), want_priority=1000)
    snap = SchedulingSnapshot.from_cluster(st)
    pending = st.pod("default", "want")
    outcome = filter_pod(snap, pending)
    if outcome.schedulable:
        return
    core = dry_run(snap, outcome).chosen
    state, jobs, starts, pods_on = _sim_inputs(st)
    allowed = outcome.mask_except("NodeResourcesFit")
    sim = find_preemption(state, pod_task(st, pending), allowed, 1000, pods_on, jobs, starts)
    if core is None:
        assert sim is None
        return
    assert sim is not None
    slot, victims = sim
    assert st.nodes[slot].name == core.node
    assert sorted(jobs[j].name for j, _ in victims) == sorted(v.info.key for v in core.victims)
