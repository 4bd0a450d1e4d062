"""A live test cluster for rebalance rounds: the suite's API server with its controllers, its
kube-scheduler (SchedulerEmulator: preemption of placeholders) and Leases, checked after every call.

Four 8-GPU nodes with one free GPU each (1-GPU ReplicaSet pods), a pending 4-GPU Job `ml/big`
created two hours before the fake clock's now, the chart's placeholder PriorityClass, and the
admin's cordoned node `spare`. After every API call the cluster must hold these invariants:
no node holds more GPUs than it has, no eviction is answered while a move's room is not held by a
bound placeholder, and no placeholder sits on a cordoned node.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from apiserver.eviction import ClusterEmulator
from apiserver.scheduler import SchedulerEmulator, check_every_call
from apiserver.server import FakeApiServer
from apiserver.wire import ObjectKey
from builders import fragmented, gpu_node, pod
from livecluster import FakeClock

from kubegpu.defrag.executor import ExecutorOptions
from kubegpu.rebalance.api import LightkubeRebalanceApi
from kubegpu.rebalance.budget import Budget
from kubegpu.rebalance.controller import RebalanceOptions, Rebalancer
from kubegpu.rebalance.metrics import RebalanceMetrics
from kubegpu.rebalance.move import MoveContext
from kubegpu.rebalance.reservation import PLACEHOLDER_CLASS, PLACEHOLDER_PRIORITY, RESERVED_FOR
from kubegpu.sources.documents import load_cluster
from kubegpu.sources.kubeconfig import Timeouts
from kubegpu.sources.live import read_live

START = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
PLACEHOLDER_PC = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                  "metadata": {"name": PLACEHOLDER_CLASS}, "value": PLACEHOLDER_PRIORITY,
                  "preemptionPolicy": "Never", "description": "kubegpu rebalance placeholders"}
CHECKPOINTED = {"kubegpu.io/last-checkpoint": "2026-12-01T11:50:00Z", "kubegpu.io/restart-time": "60"}


@dataclass
class FakeTime(FakeClock):
    """FakeClock (time passes only when the process sleeps) plus the wall time it stands for."""

    start: datetime = START

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.t)


def namespace(name: str, uid: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "uid": uid}}


def base_objects() -> list[dict]:
    objs = fragmented(4, 8, 1)
    for o in objs:
        if o["kind"] == "Pod":
            o["metadata"]["annotations"].update(CHECKPOINTED)
    return objs + [pod("big", None, 4, kind="Job", controller="big", started="2026-12-01T10:00:00Z"),
                   gpu_node("spare", 8, unschedulable=True), namespace("kube-system", "uid-kube-system"),
                   namespace("kubegpu", "uid-kubegpu"), PLACEHOLDER_PC]


@dataclass
class LiveWorld:
    server: FakeApiServer
    cluster: ClusterEmulator
    scheduler: SchedulerEmulator
    kubeconfig: Path
    journal_dir: Path
    problems: list[str]

    def api(self) -> LightkubeRebalanceApi:
        return LightkubeRebalanceApi.from_kubeconfig(str(self.kubeconfig), timeouts=Timeouts(connect=2.0, read=5.0))

    def read_state(self):
        return load_cluster(read_live(kubeconfig=str(self.kubeconfig)))

    def rebalancer(self, time: FakeTime | None = None, *, budget: Budget | None = None, ttl_s: float = 300.0,
                   reserve_timeout_s: float = 30.0, identity: str = "replica-a", **opts) -> Rebalancer:
        time = time or FakeTime()
        options = RebalanceOptions(budget=budget or Budget(), journal_dir=self.journal_dir, ttl_s=ttl_s,
                                   time_limit_s=2.0, **opts)
        executor = ExecutorOptions(poll_s=1.0, backoff_s=1.0, backoff_max_s=4.0, sleep=time.sleep, clock=time.clock,
                                   eviction_deadline_s=20.0, now=time.now)
        ctx = MoveContext(api=self.api(), executor=executor, policy=options.policy, namespace="kubegpu",
                          ttl_s=ttl_s, reserve_timeout_s=reserve_timeout_s, identity=identity,
                          metrics=RebalanceMetrics(), now=time.now)
        return Rebalancer(options, self.read_state, ctx=ctx, now=time.now)

    # -- what the cluster looks like ----------------------------------------------------------------
    def pods(self, ns: str) -> list[dict]:
        return self.cluster.pods(ns)

    def placeholders(self) -> list[dict]:
        return self.cluster.pods("kubegpu")

    def cordoned(self) -> list[str]:
        return sorted(n["metadata"]["name"] for n in self.server.objects("v1", "nodes")
                      if (n.get("spec") or {}).get("unschedulable") and n["metadata"]["name"] != "spare")

    def pod_body(self, ns: str, name: str) -> dict | None:
        return self.server.store.get(ObjectKey("v1", "pods", ns, name))

    def evicted_uids(self) -> list[str]:
        return [e.uid for e in self.cluster.evictions]

    def assert_clean(self) -> None:
        """No placeholder left, no cordon of ours left, the admin's cordon stands, no eviction twice,
        and every check after every call passed."""
        assert not self.placeholders(), [p["metadata"]["name"] for p in self.placeholders()]
        assert not self.cordoned()
        assert ("spare", False) not in self.cluster.cordon_patches
        uids = self.evicted_uids()
        assert len(uids) == len(set(uids)), "an eviction was sent twice"
        assert not self.problems, self.problems


def _invariants(server: FakeApiServer, cluster: ClusterEmulator):
    def check(request, reply) -> str | None:
        nodes = {n["metadata"]["name"]: n for n in server.objects("v1", "nodes")}
        used: dict[str, int] = {}
        holders: dict[str, list[dict]] = {}
        for p in server.objects("v1", "pods"):
            node = p["spec"].get("nodeName")
            if not node or (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            gpus = int(p["spec"]["containers"][0]["resources"].get("requests", {}).get("nvidia.com/gpu", 0))
            used[node] = used.get(node, 0) + gpus
            if (p["metadata"].get("annotations") or {}).get(RESERVED_FOR):
                holders.setdefault(p["metadata"]["annotations"][RESERVED_FOR], []).append(p)
                if (nodes[node].get("spec") or {}).get("unschedulable"):
                    return f"placeholder {p['metadata']['name']} on cordoned {node}"
        for node, n in used.items():
            cap = int(nodes[node]["status"]["allocatable"].get("nvidia.com/gpu", 0))
            if n > cap:
                return f"{node} holds {n} GPUs of {cap}"
        if request.method == "POST" and request.path.endswith("/eviction") and reply.status == 201:
            if not holders and cluster.evictions:
                gone = cluster.evictions[-1]
                return f"evicted {gone.namespace}/{gone.name} while no placeholder held any room"
        return None
    return check


def start_live_world(tmp_path: Path, *, extra: list[dict] | None = None, lag: int = 1,
                     base: list[dict] | None = None) -> LiveWorld:
    tmp_path.mkdir(parents=True, exist_ok=True)
    server = FakeApiServer().start()
    cluster = ClusterEmulator(server, lag=lag)
    scheduler = SchedulerEmulator(server, cluster)
    server.add_all((base if base is not None else base_objects()) + (extra or []))
    cluster.reconcile()
    problems = check_every_call(server, _invariants(server, cluster))
    journal_dir = tmp_path / "journals"
    journal_dir.mkdir(exist_ok=True)
    return LiveWorld(server, cluster, scheduler, server.kubeconfig(tmp_path / "kubeconfig"), journal_dir, problems)
