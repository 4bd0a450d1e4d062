"""A live test cluster for executor tests: the suite's API server, its emulated controllers, a plan.

`World` bundles the server, the emulator, a lightkube-backed api and a plan for the pending 4-GPU
pod `ml/big` on four 8-GPU nodes with one free GPU each (three moves off one node). `FakeClock`
is the executor's clock and sleep seam: time passes only when the executor sleeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from apiserver.eviction import ClusterEmulator
from apiserver.server import FakeApiServer
from apiserver.wire import ObjectKey, status_reply
from builders import fragmented, gpu_node, pod

from kubegpu.defrag import Goal, plan_defrag
from kubegpu.defrag.api import LightkubeApi
from kubegpu.defrag.executor import ExecutorOptions
from kubegpu.defrag.plan import Plan
from kubegpu.sources.kubeconfig import Timeouts


def namespace(name: str, uid: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "uid": uid}}


@dataclass
class FakeClock:
    t: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += max(seconds, 0.0)


def options(clock: FakeClock | None = None, **kw) -> ExecutorOptions:
    clock = clock or FakeClock()
    base = dict(poll_s=1.0, backoff_s=1.0, backoff_max_s=8.0, sleep=clock.sleep, clock=clock.clock,
                replacement_timeout_s=60.0, eviction_deadline_s=30.0)
    return ExecutorOptions(**{**base, **kw})


@dataclass
class World:
    server: FakeApiServer
    emulator: ClusterEmulator
    api: LightkubeApi
    plan: Plan
    journal: Path
    kubeconfig: Path

    def node_cordoned(self, name: str) -> bool:
        return bool(self.emulator.state().node_by_name[name].spec.unschedulable)

    def pod_body(self, key: str) -> dict:
        ns, _, name = key.partition("/")
        return self.server.store[ObjectKey("v1", "pods", ns, name)]

    def evicted_uids(self) -> list[str]:
        return [e.uid for e in self.emulator.evictions]

    def assert_only_planned_once(self) -> None:
        planned = {m.uid for m in self.plan.moves}
        uids = self.evicted_uids()
        assert set(uids) <= planned, f"evicted outside the plan: {set(uids) - planned}"
        assert len(uids) == len(set(uids)), "an eviction was sent twice"

    def assert_clean(self) -> None:
        """The plan ran at most once, every node we cordoned is uncordoned, the admin's 'spare' cordon stands."""
        self.assert_only_planned_once()
        assert not any(self.node_cordoned(n) for n in self.plan.cordon)
        assert self.node_cordoned("spare")
        assert ("spare", False) not in self.emulator.cordon_patches


def start_world(tmp_path: Path, *, lag: int = 1, grace: int = 0, extra: list[dict] | None = None,
                cluster_uid: str = "uid-kube-system-a", plan_goal: Goal | None = None,
                plan: Plan | None = None) -> tuple[FakeApiServer, World]:
    """Start a server (the caller stops it) holding the fragmented cluster, and plan for ml/big.

    `plan`: reuse a plan made on an identical world (object names and uids are fixed)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    server = FakeApiServer().start()
    emulator = ClusterEmulator(server, lag=lag, grace=grace)
    server.add_all(fragmented(4, 8, 1) + [pod("big", None, 4, kind="Job", controller="big"),
                                         gpu_node("spare", 8, unschedulable=True),  # the admin's cordon
                                         namespace("kube-system", cluster_uid)] + (extra or []))
    emulator.reconcile()
    kubeconfig = server.kubeconfig(tmp_path / "kubeconfig")
    api = LightkubeApi.from_kubeconfig(str(kubeconfig), timeouts=Timeouts(connect=2.0, read=2.0))
    plan = plan or plan_defrag(emulator.state(), plan_goal or Goal(kind="pod", pod="ml/big"))
    assert plan.feasible and plan.moves
    return server, World(server, emulator, api, plan, tmp_path / "journal.jsonl", kubeconfig)


def run_plan(w: World, clock: FakeClock | None = None, **kw):
    """`defrag --apply` of the world's plan, with the fake clock."""
    from kubegpu.defrag.executor import Executor
    from kubegpu.defrag.journal import Journal

    return Executor(w.api, Journal(w.journal), options(clock, **kw)).apply(w.plan)


def resume_plan(w: World, clock: FakeClock | None = None, **kw):
    """`defrag --resume` of the world's journal."""
    from kubegpu.defrag.executor import Executor
    from kubegpu.defrag.journal import Journal

    return Executor(w.api, Journal(w.journal), options(clock, **kw)).resume()


PDB_REFUSAL = "Cannot evict pod as it would violate the pod's disruption budget."
GANG_LABEL = "scheduling.x-k8s.io/pod-group"
PINNED = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}


def refuse_evictions(server: FakeApiServer, times: int) -> dict[str, int]:
    """Answer the next `times` eviction requests with 429, as the API server does when a PDB has no budget left.

    Returns the counter: set its "n" to 0 to let evictions through again."""
    left = {"n": times}

    def throttle(request):
        if request.path.endswith("/eviction") and left["n"]:
            left["n"] -= 1
            return status_reply(429, "TooManyRequests", PDB_REFUSAL)
        return None

    server.faults.append(throttle)
    return left


def gang_and_pinned_objects() -> list[dict]:
    """Three 4-GPU nodes: a 2-pod gang on n0, pinned 2-GPU pods on n1 and n2, and a pending 4-GPU Job."""
    gang = {GANG_LABEL: "ddp"}
    objs = [gpu_node(f"n{i}", 4) for i in range(3)]
    objs += [pod("ddp-0", "n0", 1, kind="Job", controller="ddp", labels=gang),
             pod("ddp-1", "n0", 1, kind="Job", controller="ddp", labels=gang),
             pod("f1", "n1", 2, controller="f1", annotations=PINNED),
             pod("f2", "n2", 2, controller="f2", annotations=PINNED),
             pod("want4", None, 4, kind="Job", controller="want4")]
    return objs
