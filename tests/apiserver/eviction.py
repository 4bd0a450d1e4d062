"""Writes for the test API server: evictions with real PDB semantics, node cordon patches, and the
controllers that recreate evicted pods (placed by kubegpu's scheduling core, as kube-scheduler would).

    server = FakeApiServer().start()
    cluster = ClusterEmulator(server, lag=1)      # installs POST pods/{name}/eviction, PATCH nodes/{name}
    server.add_all(objects)
    ...
    cluster.evictions                              # every eviction the server accepted, in order

Eviction (upstream pkg/registry/core/pod/storage/eviction.go): 404 for an unknown pod; a pod
matched by several PDBs -> 500; a not-ready pod passes under AlwaysAllow, or under IfHealthyBudget
when the budget is healthy; otherwise status.disruptionsAllowed must be > 0 and is decremented,
the pod is recorded in status.disruptedPods, and the pod is deleted (201, a Success Status).
With `grace` > 0 the deletion is graceful, as the kubelet does it: the pod gets a
deletionTimestamp and deletionGracePeriodSeconds, turns not-Ready, and is removed only `grace`
pod lists later (a pod already terminating is answered 201 again, nothing more happens).
The PDB controller recomputes every budget whenever pods change (`reconcile`).
Controllers: after an eviction the owner (ReplicaSet, Job, StatefulSet, ...) creates a
replacement, Pending; `lag` later pod lists, the scheduler binds it (the scheduling core's
filters, fullest feasible GPU node first) and the kubelet makes it Running and Ready.
"""

from __future__ import annotations

import copy
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Callable

import msgspec

from apiserver.wire import ApiRequest, ObjectKey, Reply, status_reply

PODS = ("v1", "pods")
PDBS = ("policy/v1", "poddisruptionbudgets")
NODES = ("v1", "nodes")
MULTI_PDB = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
_NO_CONTROLLER = ("DaemonSet",)


def _ready(pod: dict) -> bool:
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _selector_matches(selector: dict | None, labels: dict) -> bool:
    if not selector:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _scaled(value: Any, total: int, round_up: bool = True) -> int:
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        raw = float(text[:-1]) * total / 100
        return int(-(-raw // 1)) if round_up else int(raw)
    return int(text)


@dataclass
class Eviction:
    namespace: str
    name: str
    uid: str
    node: str | None


@dataclass
class ClusterEmulator:
    server: Any
    lag: int = 1                      # pod lists before a replacement runs
    grace: int = 0                    # pod lists an evicted pod stays terminating (0: removed at once)
    recreate: bool = True
    choose: Callable[[dict, list[str]], str] | None = None   # (pod, feasible nodes) -> node
    evictions: list[Eviction] = field(default_factory=list)
    refused: list[tuple[str, int]] = field(default_factory=list)
    cordon_patches: list[tuple[str, bool]] = field(default_factory=list)
    _pending: list[list] = field(default_factory=list)       # [pod dict, lists left]
    _terminating: list[list] = field(default_factory=list)   # [pod key, lists left]
    _names: Any = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        s = self.server
        s.route("POST", r"^/api/v1/namespaces/(?P<namespace>[^/]+)/pods/(?P<name>[^/]+)/eviction$", self._evict)
        s.route("PATCH", r"^/api/v1/nodes/(?P<name>[^/]+)$", self._patch_node)
        s.faults.insert(0, self._tick_on_list)

    # -- store helpers ---------------------------------------------------------------------------
    def _get(self, plural: tuple[str, str], ns: str, name: str) -> dict | None:
        return self.server.store.get(ObjectKey(plural[0], plural[1], ns, name))

    def pods(self, namespace: str | None = None) -> list[dict]:
        return self.server.objects(*PODS, namespace)

    def pdbs_for(self, pod: dict) -> list[dict]:
        ns = pod["metadata"]["namespace"]
        labels = pod["metadata"].get("labels") or {}
        return [p for p in self.server.objects(*PDBS, ns) if _selector_matches(p["spec"].get("selector"), labels)]

    def reconcile(self) -> None:
        """The disruption controller: recompute every PDB's status from the pods now."""
        with self.server.lock:
            for pdb in self.server.objects(*PDBS):
                pods = [p for p in self.pods(pdb["metadata"]["namespace"])
                        if _selector_matches(pdb["spec"].get("selector"), p["metadata"].get("labels") or {})
                        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
                expected = len(pods)
                healthy = sum(1 for p in pods if _ready(p))
                spec = pdb["spec"]
                if spec.get("maxUnavailable") is not None:
                    desired = max(expected - _scaled(spec["maxUnavailable"], expected), 0)
                elif spec.get("minAvailable") is not None:
                    desired = _scaled(spec["minAvailable"], expected)
                else:
                    desired = 0
                status = pdb.setdefault("status", {})
                status.update(expectedPods=expected, currentHealthy=healthy, desiredHealthy=desired,
                              disruptionsAllowed=max(healthy - desired, 0), disruptedPods={})

    # -- eviction --------------------------------------------------------------------------------
    def _evict(self, server, request: ApiRequest, namespace: str, name: str) -> Reply:
        with server.lock:
            pod = self._get(PODS, namespace, name)
            if pod is None:
                return status_reply(404, "NotFound", f'pods "{name}" not found',
                                    details={"name": name, "kind": "pods"})
            body = json.loads(request.body or b"{}")
            if body.get("kind") != "Eviction" or (body.get("metadata") or {}).get("name") != name:
                return status_reply(400, "BadRequest", "name in URL does not match name in Eviction object")
            pdbs = self.pdbs_for(pod)
            if len(pdbs) > 1:
                self.refused.append((f"{namespace}/{name}", 500))
                return status_reply(500, "InternalError", MULTI_PDB)
            if pdbs:
                pdb = pdbs[0]
                st = pdb.setdefault("status", {})
                always = pdb["spec"].get("unhealthyPodEvictionPolicy") == "AlwaysAllow"
                healthy_budget = st.get("currentHealthy", 0) >= st.get("desiredHealthy", 0) > 0
                if _ready(pod) or not (always or healthy_budget):
                    if st.get("disruptionsAllowed", 0) <= 0:
                        self.refused.append((f"{namespace}/{name}", 429))
                        msg = (f"The disruption budget {pdb['metadata']['name']} needs "
                               f"{st.get('desiredHealthy', 0)} healthy pods and has "
                               f"{st.get('currentHealthy', 0)} currently")
                        return status_reply(429, "TooManyRequests", VIOLATION,
                                            details={"causes": [{"reason": "DisruptionBudget", "message": msg}]})
                    st["disruptionsAllowed"] -= 1
                    st.setdefault("disruptedPods", {})[name] = "2026-12-01T12:00:00Z"
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                return Reply(201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                   "code": 201})
            self.evictions.append(Eviction(namespace, name, meta.get("uid", ""), pod["spec"].get("nodeName")))
            key = ObjectKey(*PODS, namespace, name)
            if self.grace > 0:
                meta["deletionTimestamp"] = "2026-12-01T12:00:30Z"
                meta["deletionGracePeriodSeconds"] = 30
                for cond in (pod.get("status") or {}).get("conditions") or []:
                    if cond.get("type") == "Ready":
                        cond["status"] = "False"
                self._terminating.append([key, self.grace])
                if self.recreate and not self._same_name(pod):
                    self._recreate(pod)
                self.reconcile()
            else:
                del server.store[key]
                if self.recreate:
                    self._recreate(pod)
        return Reply(201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                           "code": 201})

    @staticmethod
    def _same_name(pod: dict) -> bool:
        """A StatefulSet recreates its pod under the same name, so only once the old one is gone."""
        return any(r.get("controller") and r.get("kind") == "StatefulSet"
                   for r in pod["metadata"].get("ownerReferences") or [])

    def _recreate(self, pod: dict) -> None:
        ctrl = next((r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
        if ctrl is None or ctrl["kind"] in _NO_CONTROLLER:
            return
        new = copy.deepcopy(pod)
        meta = new["metadata"]
        n = next(self._names)
        if ctrl["kind"] != "StatefulSet":
            base = meta["name"].rsplit("-", 1)[0] if "-" in meta["name"] else meta["name"]
            meta["name"] = f"{base}-r{n}"
        meta["uid"] = f"{meta.get('uid', 'uid')}-r{n}"
        meta.pop("resourceVersion", None)
        meta.pop("deletionTimestamp", None)
        new["spec"].pop("nodeName", None)
        new["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}
        self.server.add(new)
        self._pending.append([new, self.lag])
        self.reconcile()

    # -- the scheduler and kubelet ------------------------------------------------------------
    def _tick_on_list(self, request: ApiRequest) -> None:
        if request.method == "GET" and request.path.rstrip("/").endswith("/pods"):
            self.tick()
        return None

    def release_pending(self) -> None:
        """Every replacement waiting for the scheduler is bound at the next pod list."""
        with self.server.lock:
            for item in self._pending:
                item[1] = 0

    def tick(self) -> None:
        with self.server.lock:
            left = []
            for item in self._terminating:
                item[1] -= 1
                if item[1] < 0:
                    gone = self.server.store.pop(item[0], None)
                    if gone is not None and self.recreate and self._same_name(gone):
                        self._recreate(gone)
                    self.reconcile()
                else:
                    left.append(item)
            self._terminating = left
            still = []
            for item in self._pending:
                item[1] -= 1
                if item[1] < 0:
                    self._bind(item[0])
                else:
                    still.append(item)
            self._pending = still

    def _bind(self, pod: dict) -> None:
        from kubegpu.model.kinds import Pod
        from kubegpu.model.decode import decode_object
        from kubegpu.scheduling.cycle import filter_pod
        from kubegpu.scheduling.snapshot import SchedulingSnapshot

        key = ObjectKey(*PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
        stored = self.server.store.get(key)
        if stored is None:
            return
        state = self.state()
        snap = SchedulingSnapshot.from_cluster(state)
        obj = decode_object(msgspec.Raw(json.dumps({**stored, "apiVersion": "v1", "kind": "Pod"}).encode()))
        assert isinstance(obj, Pod)
        outcome = filter_pod(snap, obj)
        feasible = [snap.names[i] for i in outcome.feasible]
        if not feasible:
            return  # stays Pending, as it would on a real cluster
        if self.choose is not None:
            node = self.choose(stored, feasible)
        else:
            col = snap.column.get("nvidia.com/gpu")
            if col is not None:
                free = {n: int(snap.alloc[snap.index[n], col] - snap.requested[snap.index[n], col]) for n in feasible}
                node = min(feasible, key=lambda n: (free[n], n))
            else:
                node = feasible[0]
        stored["spec"]["nodeName"] = node
        stored["status"] = {"phase": "Running", "startTime": "2026-12-01T12:05:00Z",
                            "conditions": [{"type": "PodScheduled", "status": "True"},
                                           {"type": "Ready", "status": "True"}]}
        self.reconcile()

    def state(self):
        """The server's objects as a kubegpu ClusterState."""
        from kubegpu.sources.documents import Documents, load_cluster

        docs = Documents(source="fake-apiserver")
        with self.server.lock:
            for k, obj in self.server.store.items():
                body = copy.deepcopy(obj)
                rtype = next(t for t in self.server.types.values() if t.api_version == k.api_version
                             and t.plural == k.plural)
                body.setdefault("apiVersion", rtype.api_version)
                body.setdefault("kind", rtype.kind)
                docs.add(body, "fake-apiserver")
        return load_cluster(docs)

    # -- cordon ----------------------------------------------------------------------------------
    def _patch_node(self, server, request: ApiRequest, name: str) -> Reply:
        ctype = request.headers.get("content-type", "")
        if "patch" not in ctype:
            return status_reply(415, "UnsupportedMediaType", "the body of the request was in an unknown format")
        with server.lock:
            node = self._get(NODES, "", name)
            if node is None:
                return status_reply(404, "NotFound", f'nodes "{name}" not found', details={"name": name})
            patch = json.loads(request.body or b"{}")
            spec = patch.get("spec") or {}
            if "unschedulable" in spec:
                value = bool(spec["unschedulable"])
                node.setdefault("spec", {})["unschedulable"] = value
                if not value:
                    node["spec"].pop("unschedulable")
                self.cordon_patches.append((name, value))
            server._rv += 1
            node["metadata"]["resourceVersion"] = str(server._rv)
            body = {"apiVersion": "v1", "kind": "Node", **{k: v for k, v in node.items()
                                                           if k not in ("apiVersion", "kind")}}
        return Reply(200, body)
