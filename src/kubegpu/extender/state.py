"""What the extender answers from: one built generation of the cluster, plus assumed bindings.

A generation (`ExtenderModel`) is built once per cluster change (the static source once; the
live list/watch after every debounced burst): the scheduling core's snapshot, the placement
state (free CPU, memory and milli-GPU per device), the workload mix the policy scores against,
and the gangs. Building takes seconds at 5,000 nodes, so between two builds the extender keeps
an overlay of *assumed bindings*: the node it scored top for a pod counts that pod as placed
until a build shows the pod bound (the watch delivered the bind) or `assume_ttl` passes. A bind
the watch delivers (by any scheduler) goes on the same overlay the moment it arrives
(`observe_pod`), and a watched pod that ends gives back what the overlay held for it, so binds
reach the scores in milliseconds rather than after the next build; everything else (node
changes, pods of the generation that end) waits for the build.
Requests and builds swap state under one lock; a request never sees half a generation.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from itertools import repeat

import msgspec
import numpy as np

from kubegpu.extender.gpu_rules import GpuVerdictCache, node_groups
from kubegpu.extender.podfacts import PodFacts
from kubegpu.extender.wire import ByteCatalog, host_records, name_catalogs
from kubegpu.fragmentation.cluster import cluster_mix, cluster_placement
from kubegpu.model.cluster import ClusterState
from kubegpu.model.gpu import NodeGpu
from kubegpu.model.kinds import Pod
from kubegpu.scheduling.gang import Gang, GangPlacement, find_gangs, gang_marker, place_gang
from kubegpu.placement.measure import ShapeMix
from kubegpu.placement.registry import make_policy
from kubegpu.placement.state import PlacementState, default_devices
from kubegpu.placement.task import Placement, Task
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion, version_of
from kubegpu.web.store import ModelStore

DEFAULT_ASSUME_TTL = 30.0   # seconds an assumed binding counts without the watch confirming it
OBSERVED_TTL = 600.0        # a watched bind waits this long at most for a generation that shows it
SHAPE_CACHE_SIZE = 256      # filter outcomes remembered per generation (one per pod shape)
NAMES_CACHE_SIZE = 16       # NodeNames lists remembered per generation


@dataclass
class ExtenderModel:
    """One generation: everything derived from one ClusterState, read-only once built."""

    cluster: ClusterState
    snapshot: SchedulingSnapshot
    version: KubeVersion
    base: PlacementState
    mix: ShapeMix
    gangs: dict[str, Gang]
    node_gpus: list[NodeGpu]
    generation: int
    built_at: float
    build_seconds: float
    gpu_group: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # node -> GPU kind
    gpu_kinds: list[NodeGpu] = field(default_factory=list)
    host_records: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.uint8))  # prioritize replies
    name_keys: ByteCatalog | None = None     # filter replies: `"name":` and `"name",` per node
    name_items: ByteCatalog | None = None
    pods_by_uid: dict = field(default_factory=dict)          # bound pods, for preemption victims
    shape_cache: OrderedDict = field(default_factory=OrderedDict)     # pod shape -> core verdict
    gpu_cache: OrderedDict = field(default_factory=OrderedDict)       # pod shape -> GpuVerdictCache
    names_cache: OrderedDict = field(default_factory=OrderedDict)     # NodeNames bytes -> resolved names
    gang_cache: dict[str, GangPlacement] = field(default_factory=dict)

    @classmethod
    def build(cls, cluster: ClusterState, *, generation: int, k8s_version: str | None = None) -> "ExtenderModel":
        start = time.perf_counter()
        snapshot = SchedulingSnapshot(cluster)
        base = cluster_placement(cluster)  # built from the snapshot's NodeTable: one node order
        node_gpus = [cluster.node_gpus[name] for name in snapshot.names]
        encoded = [msgspec.json.encode(name) for name in snapshot.names]
        keys, items = name_catalogs(encoded)
        gpu_group, gpu_kinds = node_groups(node_gpus)
        return cls(cluster=cluster, snapshot=snapshot, version=version_of(cluster.server_version, k8s_version),
                   base=base, mix=cluster_mix(cluster), gangs=find_gangs(cluster),
                   node_gpus=node_gpus, gpu_group=gpu_group, gpu_kinds=gpu_kinds, generation=generation,
                   built_at=time.time(), build_seconds=time.perf_counter() - start,
                   host_records=host_records(encoded), name_keys=keys, name_items=items,
                   pods_by_uid={p.metadata.uid: p for p in cluster.pods
                                if p.metadata.uid and p.is_bound and not p.is_terminal})

    def facts(self, pod) -> "PodFacts":
        """The request pod's facts; labels key the core's verdict only if some pod's anti-affinity can read them."""
        return PodFacts.of(pod, labels_matter=bool(self.snapshot.pod_anti.any()))

    @property
    def index(self) -> dict[str, int]:
        return self.snapshot.index

    def gang_of(self, pod) -> Gang | None:
        marker = gang_marker(pod)
        return self.gangs.get(f"{pod.namespace}/{marker[1]}") if marker else None

    def gang_placement(self, gang: Gang, choose) -> GangPlacement:
        """Where the gang's pending members would all go (the core's rule, then `choose`), once per generation."""
        hit = self.gang_cache.get(gang.key)
        if hit is None:
            hit = self.gang_cache[gang.key] = place_gang(self.snapshot, gang, version=self.version, choose=choose)
        return hit

    def node_names(self, raw: bytes, decode) -> "NodeSet":
        """A request's NodeNames resolved to node indices, remembered by the list's bytes."""
        hit = self.names_cache.get(raw)
        if hit is not None:
            self.names_cache.move_to_end(raw)
            return hit
        names = decode(raw)
        idx = np.fromiter(map(self.index.get, names, repeat(-1)), dtype=np.int64, count=len(names))
        hit = self.names_cache[raw] = NodeSet(names, idx, idx >= 0)
        while len(self.names_cache) > NAMES_CACHE_SIZE:
            self.names_cache.popitem(last=False)
        return hit

    def remember_shape(self, key: bytes, value) -> None:
        self.shape_cache[key] = value
        while len(self.shape_cache) > SHAPE_CACHE_SIZE:
            self.shape_cache.popitem(last=False)

    def gpu_verdicts(self, facts, live: PlacementState, idx: np.ndarray, *, assume_ttl: float):
        """The GPU rules for the pod on the nodes `idx`, from the pod shape's per-node cache."""
        cache = self.gpu_cache.get(facts.gpu_shape)
        if cache is None:
            cache = self.gpu_cache[facts.gpu_shape] = GpuVerdictCache(len(self.snapshot.names))
            while len(self.gpu_cache) > SHAPE_CACHE_SIZE:
                self.gpu_cache.popitem(last=False)
        else:
            self.gpu_cache.move_to_end(facts.gpu_shape)
        return cache.get(facts, live, self.base, self.gpu_group, self.gpu_kinds, idx, assume_ttl=assume_ttl)


class NodeSet(list):
    """The node names of one request (a list of str) with their indices in the generation."""

    def __init__(self, names: list[str], idx: np.ndarray, known: np.ndarray) -> None:
        super().__init__(names)
        self.idx = idx
        self.known = known


@dataclass
class Assumed:
    """A pod the extender scored top on a node, counted there until bound or expired."""

    pod_key: str
    task: Task
    placement: Placement
    node: str
    at: float
    expires: float
    observed: bool = False      # the watch showed it bound there (not only the extender's guess)


class ExtenderStore(ModelStore):
    """The current generation + the assumed-bindings overlay, fed by a static load or the live watch.

    Subclasses the dashboard's ModelStore so the live refresher (web.watch) drives it unchanged;
    `install` builds an ExtenderModel instead of dashboard views.
    """

    def __init__(self, *, policy: str, k8s_version: str | None = None, stale_after: float = 300.0,
                 live: bool = False, assume_ttl: float = DEFAULT_ASSUME_TTL, seed: int | None = None) -> None:
        super().__init__(k8s_version=k8s_version, stale_after=stale_after, live=live)
        self.policy_name = policy
        self.seed = seed
        self.assume_ttl = assume_ttl
        self.lock = threading.RLock()
        self.model: ExtenderModel | None = None
        self.live: PlacementState | None = None    # base + assumed bindings
        self.policy = None
        self.assumed: dict[str, Assumed] = {}
        self.confirmed_after: deque[float] = deque(maxlen=1000)  # seconds from assume to the build showing the bind
        self.on_confirm: list = []                  # callbacks(seconds), e.g. the metrics histogram
        self.expired = 0
        self.observed = 0                            # watched pod events that changed the overlay

    # ---- generations ---------------------------------------------------------------------
    def install(self, state: ClusterState) -> None:
        """Build a generation of `state` and make it current (the live refresher calls this)."""
        model = ExtenderModel.build(state, generation=self.generation + 1, k8s_version=self.k8s_version)
        self.swap(model)

    def swap(self, model: ExtenderModel) -> None:
        """Make a built generation current, carrying over the assumed bindings it does not show bound."""
        state = model.cluster
        policy = make_policy(self.policy_name, mix=model.mix, seed=self.seed)
        with self.lock:
            now = time.time()
            live = model.base.copy()
            kept: dict[str, Assumed] = {}
            for key, a in self.assumed.items():
                pod = _bound_pod(state, key)
                if pod is not None:
                    self.confirmed_after.append(now - a.at)
                    for callback in self.on_confirm:
                        callback(now - a.at)
                    continue
                if a.expires <= now:
                    self.expired += 1
                    continue
                i = model.index.get(a.node)
                if i is not None and live.fits_on(a.task, i):
                    live.place(a.task, Placement(i, a.placement.devices))
                    kept[key] = Assumed(key, a.task, Placement(i, a.placement.devices), a.node, a.at, a.expires,
                                        a.observed)
            self.assumed = kept
            self.model, self.live, self.policy = model, live, policy
            self.views = model            # ModelStore.ready()/age() look at `views`
            self.generation = model.generation
            self.health.last_build_seconds = model.build_seconds
            self.health.loaded_at = self.health.synced_at = now
            self.health.refreshes += 1
            self.health.last_error = ""

    def _confirmed(self, seconds: float) -> None:
        self.confirmed_after.append(seconds)
        for callback in self.on_confirm:
            callback(seconds)

    # ---- the overlay -----------------------------------------------------------------------
    def expire(self, now: float | None = None) -> None:
        """Drop assumed bindings older than the TTL (their resources are given back)."""
        now = time.time() if now is None else now
        with self.lock:
            for key in [k for k, a in self.assumed.items() if a.expires <= now]:
                a = self.assumed.pop(key)
                self.live.remove(a.task, a.placement)
                self.expired += 1

    def assume(self, pod_key: str, task: Task, placement: Placement) -> None:
        """Count `task` on the placement's node until the watch shows it bound or the TTL passes."""
        now = time.time()
        with self.lock:
            old = self.assumed.pop(pod_key, None)
            if old is not None:
                self.live.remove(old.task, old.placement)
            if not self.live.fits_on(task, placement.node):
                return
            self.live.place(task, placement)
            self.assumed[pod_key] = Assumed(pod_key, task, placement, self.live.names[placement.node], now,
                                            now + self.assume_ttl)


    def observe_pod(self, pod: Pod, *, gone: bool = False) -> bool:
        """A pod event from the watch, applied to the overlay at once; True when it changed the overlay.

        A bind the current generation does not count goes on its node (the devices the default
        rule picks; an assumed binding of the same pod on the same node is kept as it is); a pod
        that ended or was deleted gives back what the overlay held for it. Pods the generation
        already counts, and pods on nodes it does not know, wait for the next build."""
        with self.lock:
            changed = self._observe(pod, gone)
            self.observed += changed
            return changed

    def _observe(self, pod: Pod, gone: bool) -> bool:
        key = pod.key
        now = time.time()
        model, live = self.model, self.live
        if model is None:
            return False
        held = self.assumed.get(key)
        if gone or pod.is_terminal or not pod.spec.node_name:
            if held is None or (not gone and not pod.is_terminal and not held.observed):
                return False    # still pending: an assumed binding stays until bound or expired
            live.remove(held.task, held.placement)
            del self.assumed[key]
            return True
        if held is not None and held.observed:
            return False
        if pod.metadata.uid and pod.metadata.uid in model.pods_by_uid:
            return False
        i = model.index.get(pod.spec.node_name)
        if i is None:
            return False
        if held is not None and held.node == pod.spec.node_name:
            held.observed, held.expires = True, now + OBSERVED_TTL
            self._confirmed(now - held.at)
            return True
        if held is not None:
            live.remove(held.task, held.placement)
            del self.assumed[key]
        task = PodFacts.of(pod).task(model.gpu_kinds[int(model.gpu_group[i])])
        if not live.fits_on(task, i):
            return held is not None   # our view has no room for it: the build will count it
        placement = Placement(i, default_devices(live.dev_free[i], task))
        live.place(task, placement)
        self.assumed[key] = Assumed(key, task, placement, pod.spec.node_name, now, now + OBSERVED_TTL,
                                    observed=True)
        return True


def _bound_pod(state: ClusterState, key: str):
    ns, _, name = key.partition("/")
    pod = state.pod(ns, name)
    return pod if pod is not None and pod.spec.node_name else None


def node_index_array(model: ExtenderModel, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(index per requested name, -1 when unknown; bool mask of known names)."""
    if isinstance(names, NodeSet):
        return names.idx, names.known
    idx = np.fromiter(map(model.index.get, names, repeat(-1)), dtype=np.int64, count=len(names))
    return idx, idx >= 0
