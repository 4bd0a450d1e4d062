"""The FGD inflation experiment replayed through the kube-scheduler stand-in and the extender.

Used by bench/bench_protocol_quality.py (the shared openb traces) and test_protocol_quality.py
(a few dozen nodes). One run follows `kubegpu.simulate.inflation.simulate_run` step for step
(the same seeded shuffle / resample / tune of the trace, the same tie order, the same policy
seed), except that each pod is placed by the stand-in (standin.py): its own filters (the
scheduling core), the extender's /filter, then /prioritize, the extender's score x weight x 10
added to the stand-in's own default-profile scores, the highest total bound (seeded
reservoir-random among ties, as upstream selectHost).

The trace becomes Kubernetes objects the extender reads like any cluster:

* a node: cpu / memory / pods 1000 allocatable, `nvidia.com/gpu.shared` = GPUs x 100 with GFD
  labels `nvidia.com/gpu.count`, `nvidia.com/gpu.replicas: 100`, `nvidia.com/gpu.sharing-strategy:
  mps` and `nvidia.com/gpu.product` = the trace's model (renamed resources carry no -SHARED
  suffix), so a unit is 1/100 of one device;
* a pod: cpu / memory requests, `nvidia.com/gpu.shared` = num_gpu x gpu_milli / 10 units (a
  whole k-GPU pod k x 100 units, k devices; a 460m share 46 units on one device), a model pin
  as a nodeSelector (one model) or a required node-affinity In term (several).

kube-scheduler only counts units; the device-level fit (a share needs room on one device, k
whole GPUs need k free devices) is the extender's /filter, as in a real cluster.

What the watch would deliver (the bind) is told to the extender directly: after each bind the
pod is assumed on the node the stand-in chose (devices as the policy picks them on that node),
replacing the extender's own assumption; the assumed-binding TTL is infinite, so the extender's
state is exactly the bound pods. The extender scores against the trace's workload mix (what
`simulate inflation` uses), set on its generation before the first call.

Calls go through the extender's service functions (service.Extender.filter / prioritize: the
same request and reply bytes as over HTTP, without the socket) via an httpx transport, or, with
`loopback=True`, over real loopback HTTP to uvicorn (tests/extender/loopback.py).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import httpx
import msgspec
import numpy as np
from loopback import serving
from standin import ExtenderConfig, HTTPExtender, StandIn

from kubegpu.extender.ledger import Ledger
from kubegpu.extender.metrics import ExtenderMetrics
from kubegpu.extender.podfacts import decode_pod
from kubegpu.extender.service import BadRequest, Extender
from kubegpu.extender.state import ExtenderModel, ExtenderStore
from kubegpu.fragmentation.shapes import mix_from_tasks
from kubegpu.model.cluster import ClusterState
from kubegpu.model.decode import decode_object
from kubegpu.placement.task import MILLI, Placement, Task
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.simulate.inflation import DEFAULT_TUNE, Curves, inflate_workload
from kubegpu.simulate.trace import TraceNodes, trace_state


SHARED = "nvidia.com/gpu.shared"
UNITS_PER_GPU = 100
MIB = 1 << 20
MANAGED = ["nvidia.com/gpu", SHARED]     # the chart's managedResources plus the renamed shared resource
FOREVER = 1e12


def node_doc(nodes: TraceNodes, i: int) -> dict:
    gpus = nodes.gpus[i]
    labels = {"kubernetes.io/hostname": nodes.names[i]}
    alloc = {"cpu": f"{nodes.cpu_milli[i]}m", "memory": str(nodes.memory_mib[i] * MIB), "pods": "1000"}
    if gpus:
        labels.update({"nvidia.com/gpu.product": nodes.models[i], "nvidia.com/gpu.count": str(gpus),
                       "nvidia.com/gpu.replicas": str(UNITS_PER_GPU), "nvidia.com/gpu.sharing-strategy": "mps"})
        alloc[SHARED] = str(gpus * UNITS_PER_GPU)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": nodes.names[i], "labels": labels},
            "status": {"capacity": dict(alloc), "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod_doc(task: Task, name: str) -> dict:
    requests = {"cpu": f"{task.cpu_milli}m", "memory": str(task.mem_bytes)}
    limits: dict[str, str] = {}
    spec: dict = {"schedulerName": "kubegpu-scheduler"}
    if task.num_gpu:
        limits[SHARED] = requests[SHARED] = str(task.num_gpu * task.gpu_milli * UNITS_PER_GPU // MILLI)
        if task.models and len(task.models) == 1:
            spec["nodeSelector"] = {"nvidia.com/gpu.product": next(iter(task.models))}
        elif task.models:
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "nvidia.com/gpu.product", "operator": "In", "values": sorted(task.models)}]}]}}}
    spec["containers"] = [{"name": "main", "image": "trace", "resources": {"requests": requests, "limits": limits}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "trace", "uid": f"uid-{name}"}, "spec": spec}


class ServiceTransport(httpx.BaseTransport):
    """POST /filter and /prioritize answered by the extender's service functions (no socket)."""

    def __init__(self, extender: Extender) -> None:
        self.verbs = {"/filter": extender.filter, "/prioritize": extender.prioritize}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        verb = self.verbs.get(request.url.path)
        if verb is None:
            return httpx.Response(404)
        try:
            return httpx.Response(200, content=verb(request.read()),
                                  headers={"Content-Type": "application/json"})
        except BadRequest as err:
            return httpx.Response(400, content=str(err).encode())


@dataclass
class ReplayRun:
    seed: int
    weight: int
    pods: int = 0
    placed: int = 0
    scored: int = 0              # pods the extender scored (prioritize answered with a choice)
    agreed: int = 0              # ... and the stand-in bound the policy's choice
    unallocated_at_100: float = float("nan")
    arrived: list[int] = field(default_factory=list)
    allocated: list[int] = field(default_factory=list)

    @property
    def agreement(self) -> float:
        return self.agreed / self.scored if self.scored else float("nan")


def strided(nodes: TraceNodes, stride: int) -> TraceNodes:
    """Every `stride`-th node of a trace cluster (a smaller cluster with the same mix of node kinds)."""
    keep = slice(0, None, stride)
    return TraceNodes(names=nodes.names[keep], cpu_milli=nodes.cpu_milli[keep], memory_mib=nodes.memory_mib[keep],
                      gpus=nodes.gpus[keep], models=nodes.models[keep])


def cluster_of(nodes: TraceNodes) -> ClusterState:
    return ClusterState([decode_object(node_doc(nodes, i)) for i in range(len(nodes.names))],
                        server_version="v1.33.0")


def replay_run(nodes: TraceNodes, tasks: list[Task], policy: str, seed: int, *, weight: int,
               tune: float = DEFAULT_TUNE, loopback: bool = False, managed: list[str] | None = None) -> ReplayRun:
    """One inflation run through the stand-in and the extender (see the module docstring).

    `managed`: the extender's managedResources (default MANAGED: GPU pods only; [] sends every pod).
    """
    rng = np.random.default_rng(seed)            # the draws in simulate_run's order
    order = inflate_workload(tasks, nodes.total_gpus * MILLI, tune, rng)
    tie_rank = rng.permutation(len(nodes.names))
    policy_seed = int(rng.integers(2**32))
    cluster = cluster_of(nodes)
    store = ExtenderStore(policy=policy, assume_ttl=FOREVER, seed=policy_seed)
    model = ExtenderModel.build(cluster, generation=1)
    model.mix = mix_from_tasks(tasks)
    model.base.tie_rank = np.asarray(tie_rank, dtype=np.int64)
    if model.base.names != trace_state(nodes).names:
        raise RuntimeError("the extender's node order is not the trace's")
    store.swap(model)
    ledger = Ledger(None)
    extender = Extender(store, ledger, ExtenderMetrics(store, ledger), max_work_lost=8.0)
    node_objects = {n["metadata"]["name"]: n for n in (node_doc(nodes, i) for i in range(len(nodes.names)))}
    run = ReplayRun(seed=seed, weight=weight)
    with contextlib.ExitStack() as stack:
        if loopback:
            url = stack.enter_context(serving(extender))
            client = stack.enter_context(httpx.Client())
        else:
            url = "http://extender"
            client = stack.enter_context(httpx.Client(transport=ServiceTransport(extender)))
        config = ExtenderConfig(url_prefix=url, weight=weight,
                                managed_resources=MANAGED if managed is None else managed)
        standin = StandIn(SchedulingSnapshot(ClusterState([decode_object(d) for d in node_objects.values()],
                                                          server_version="v1.33.0")),
                          node_objects, [HTTPExtender(config, client)], percentage=100, seed=seed)
        arrived = allocated = 0
        for k, index in enumerate(order.tolist()):
            task = tasks[index]
            doc = pod_doc(task, f"p{k:06d}")
            pod = decode_pod(msgspec.json.encode(doc))
            before = ledger.ring[-1] if ledger.ring else None
            attempt = standin.schedule(doc, pod)
            arrived += task.total_gpu_milli
            if attempt.node is not None:
                allocated += task.total_gpu_milli
                run.placed += 1
                chosen = _policy_choice(ledger, before)
                if chosen is not None:
                    run.scored += 1
                    run.agreed += chosen == attempt.node
                _bind(store, model, pod, attempt.node)
            run.arrived.append(arrived)
            run.allocated.append(allocated)
        run.pods = len(order)
    curves = Curves(arrived_milli=np.asarray(run.arrived), allocated_milli=np.asarray(run.allocated),
                    frag_milli=np.zeros(len(run.arrived)), total_gpus=nodes.total_gpus)
    alloc = curves.at([100])[0]
    run.unallocated_at_100 = round(100.0 - alloc["100"], 3) if "100" in alloc else float("nan")
    return run


def _policy_choice(ledger: Ledger, before) -> str | None:
    """The node the policy chose in this pod's prioritize call (None: not scored)."""
    for d in reversed(ledger.ring):
        if d is before:
            break
        if d.mode == "extender-prioritize":
            return d.chosen
    return None


def _bind(store: ExtenderStore, model: ExtenderModel, pod, node: str) -> None:
    """What the watch would deliver: the pod bound on `node` (devices as the policy picks them there)."""
    facts = model.facts(pod)
    i = model.index[node]
    task = facts.task(model.gpu_kinds[int(model.gpu_group[i])])
    with store.lock:
        held = store.assumed.get(pod.key)
        if held is not None and held.node == node:
            return
        if held is not None:
            store.live.remove(held.task, held.placement)
            del store.assumed[pod.key]
        only = np.zeros(store.live.n_nodes, dtype=bool)
        only[i] = True
        placement = store.policy.choose(store.live, task, only) if task.num_gpu else Placement(i, ())
        if placement is None:
            raise RuntimeError(f"the stand-in bound {pod.key} to {node}, where the extender finds no room")
        store.assume(pod.key, task, placement)
