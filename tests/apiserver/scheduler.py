"""What the rebalancer needs from the test API server: pod create/delete with priority admission,
kube-scheduler for every pending pod (with DefaultPreemption), Leases with resourceVersion
conflicts, and events.k8s.io/v1 Events with their strict validation.

    server = FakeApiServer().start()
    cluster = ClusterEmulator(server)          # evictions, cordons, controllers (eviction.py)
    sched = SchedulerEmulator(server, cluster) # installs the routes below; schedules on every pod GET

Pod create (upstream plugin/pkg/admission/priority): `spec.priorityClassName` must name an existing
PriorityClass (else 403 `pods "<name>" is forbidden: no PriorityClass with name <pc> was found`),
a `spec.priority` that differs from the class's value is refused (403), and the server sets
`spec.priority` and `spec.preemptionPolicy` from the class (the global default class, else 0).
Scheduling: on every GET of pods the pending pods are tried in queue order (priority, then age):
the scheduling core's filters, the fullest feasible GPU node first (as ClusterEmulator binds); a pod
that fits nowhere gets DefaultPreemption's dry run (kubegpu.scheduling.preemption, upstream's
SelectVictimsOnNode and pickOneNodeForPreemption): the victims are deleted (DisruptionTarget
first, as upstream) and the preemptor bound there; otherwise PodScheduled=False, Unschedulable.
Replacements ClusterEmulator still holds back (its `lag`) are left to it.
Leases (coordination.k8s.io/v1): create (409 AlreadyExists), update with the resourceVersion read
(409 Conflict with upstream's "the object has been modified" message when it changed).
"""

from __future__ import annotations

import copy
import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Callable


from apiserver.eviction import PODS, ClusterEmulator
from apiserver.resources import ResourceType, _t
from apiserver.wire import ApiRequest, ObjectKey, Reply, status_reply

LEASES: ResourceType = _t("coordination.k8s.io/v1", "leases", "Lease", True)
EVENTS = ("events.k8s.io/v1", "events")
MODIFIED = ("Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": the object has been modified; "
            "please apply your changes to the latest version and try again")


@dataclass
class Preemption:
    preemptor: str
    victims: list[str]
    node: str


@dataclass
class SchedulerEmulator:
    server: Any
    cluster: ClusterEmulator
    now: str = "2026-12-01T12:00:00Z"          # creationTimestamp of created pods
    preemptions: list[Preemption] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    enabled: bool = True
    _uids: Any = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        s = self.server
        s.register(LEASES)
        ns_pods = r"^/api/v1/namespaces/(?P<namespace>[^/]+)/pods"
        s.route("POST", ns_pods + r"$", self._create_pod)
        s.route("DELETE", ns_pods + r"/(?P<name>[^/]+)$", self._delete_pod)
        leases = r"^/apis/coordination\.k8s\.io/v1/namespaces/(?P<namespace>[^/]+)/leases"
        s.route("POST", leases + r"$", self._create_lease)
        s.route("PUT", leases + r"/(?P<name>[^/]+)$", self._update_lease)
        s.route("POST", r"^/apis/events\.k8s\.io/v1/namespaces/(?P<namespace>[^/]+)/events$", self._create_event)
        s.faults.insert(1, self._tick_on_get)

    # -- pods -------------------------------------------------------------------------------------
    def _create_pod(self, server, request: ApiRequest, namespace: str) -> Reply:
        body = json.loads(request.body or b"{}")
        meta = body.setdefault("metadata", {})
        if meta.get("namespace", namespace) != namespace:
            return status_reply(400, "BadRequest", "the namespace of the provided object does not match the "
                                                   "namespace sent on the request")
        name = meta.get("name")
        if not name:
            return status_reply(422, "Invalid", "Pod \"\" is invalid: metadata.name: Required value: name or "
                                                "generateName is required")
        with server.lock:
            if ObjectKey(*PODS, namespace, name) in server.store:
                return status_reply(409, "AlreadyExists", f'pods "{name}" already exists',
                                    details={"name": name, "kind": "pods"})
            refused = self._admit_priority(server, body, name)
            if refused is not None:
                return refused
            meta.update(namespace=namespace, uid=f"created-{next(self._uids)}", creationTimestamp=self.now)
            body["apiVersion"], body["kind"] = "v1", "Pod"
            body["status"] = {"phase": "Pending"}
            server.add(body)
            self.created.append(f"{namespace}/{name}")
            stored = server.store[ObjectKey(*PODS, namespace, name)]
        return Reply(201, copy.deepcopy(stored))

    @staticmethod
    def _admit_priority(server, body: dict, name: str) -> Reply | None:
        """upstream priority admission: resolve the class into spec.priority and spec.preemptionPolicy."""
        spec = body.setdefault("spec", {})
        classes = server.objects("scheduling.k8s.io/v1", "priorityclasses")
        wanted = spec.get("priorityClassName")
        if wanted:
            pc = next((c for c in classes if c["metadata"]["name"] == wanted), None)
            if pc is None:
                return status_reply(403, "Forbidden", f'pods "{name}" is forbidden: no PriorityClass with name '
                                                      f"{wanted} was found")
        else:
            pc = next((c for c in classes if c.get("globalDefault")), None)
            if pc is not None:
                spec["priorityClassName"] = pc["metadata"]["name"]
        value = int(pc.get("value", 0)) if pc is not None else 0
        if spec.get("priority") is not None and spec["priority"] != value:
            return status_reply(403, "Forbidden", f'pods "{name}" is forbidden: the integer value of priority '
                                                  f"({spec['priority']}) must not be provided in pod spec; priority "
                                                  f"admission controller computed {value} from the given "
                                                  "PriorityClass name")
        spec["priority"] = value
        spec["preemptionPolicy"] = (pc or {}).get("preemptionPolicy") or spec.get("preemptionPolicy") or \
            "PreemptLowerPriority"
        return None

    def _delete_pod(self, server, request: ApiRequest, namespace: str, name: str) -> Reply:
        with server.lock:
            pod = server.store.pop(ObjectKey(*PODS, namespace, name), None)
            if pod is None:
                return status_reply(404, "NotFound", f'pods "{name}" not found', details={"name": name, "kind": "pods"})
            self.deleted.append(f"{namespace}/{name}")
            self.cluster.reconcile()
            pod["metadata"]["deletionTimestamp"] = self.now
        return Reply(200, {"apiVersion": "v1", "kind": "Pod", **{k: v for k, v in pod.items()
                                                                 if k not in ("apiVersion", "kind")}})

    # -- kube-scheduler -----------------------------------------------------------------------------
    def _tick_on_get(self, request: ApiRequest) -> None:
        if self.enabled and request.method == "GET" and "/pods" in request.path:
            self.tick()
        return None

    def _queue(self) -> list[dict]:
        held = {(p[0]["metadata"]["namespace"], p[0]["metadata"]["name"]) for p in self.cluster._pending}
        pods = [p for p in self.cluster.pods() if not p["spec"].get("nodeName")
                and not p["metadata"].get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                and (p["metadata"]["namespace"], p["metadata"]["name"]) not in held
                and not p["spec"].get("schedulingGates")]
        return sorted(pods, key=lambda p: (-(p["spec"].get("priority") or 0), p["metadata"].get("creationTimestamp")
                                           or "", p["metadata"]["namespace"], p["metadata"]["name"]))

    def tick(self) -> None:
        with self.server.lock:
            for pod in self._queue():
                self.schedule_one(pod)

    def schedule_one(self, pod: dict) -> str | None:
        from kubegpu.scheduling.preemption import dry_run, preemption_policy
        from kubegpu.scheduling.cycle import filter_pod
        from kubegpu.scheduling.snapshot import SchedulingSnapshot

        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        state = self.cluster.state()
        obj = state.pod(ns, name)
        if obj is None:
            return None
        snap = SchedulingSnapshot.from_cluster(state)
        outcome = filter_pod(snap, obj)  # SchedulingSnapshot.filter_pod became cycle.filter_pod
        feasible = [snap.names[i] for i in outcome.feasible]
        if feasible:
            node = _fullest(snap, feasible)
            self._bind(pod, node)
            return node
        result = dry_run(snap, outcome)
        if result.chosen is not None and preemption_policy(snap, outcome.info) != "Never":
            victims = [v.info.pod for v in result.chosen.victims]
            for v in victims:
                self.server.store.pop(ObjectKey(*PODS, v.metadata.namespace or "default", v.metadata.name), None)
            self.preemptions.append(Preemption(f"{ns}/{name}", [v.key for v in victims], result.chosen.node))
            self.cluster.reconcile()
            self._bind(pod, result.chosen.node)
            return result.chosen.node
        msg = f"0/{outcome.num_nodes} nodes are available" + (f"; {result.message}" if result.message else "")
        pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                             "reason": "Unschedulable", "message": msg}]}
        return None

    def _bind(self, pod: dict, node: str) -> None:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running", "startTime": self.now,
                         "conditions": [{"type": "PodScheduled", "status": "True"},
                                        {"type": "Ready", "status": "True"}]}
        self.server._rv += 1
        pod["metadata"]["resourceVersion"] = str(self.server._rv)
        self.cluster.reconcile()

    # -- leases -------------------------------------------------------------------------------------
    def _create_lease(self, server, request: ApiRequest, namespace: str) -> Reply:
        body = json.loads(request.body or b"{}")
        name = (body.get("metadata") or {}).get("name", "")
        with server.lock:
            key = ObjectKey(LEASES.api_version, "leases", namespace, name)
            if key in server.store:
                return status_reply(409, "AlreadyExists", f'leases.coordination.k8s.io "{name}" already exists',
                                    details={"name": name, "group": "coordination.k8s.io", "kind": "leases"})
            body["metadata"].pop("resourceVersion", None)
            body["metadata"].update(namespace=namespace, uid=f"lease-{next(self._uids)}")
            server.add(body)
            return Reply(201, copy.deepcopy(server.store[key]))

    def _update_lease(self, server, request: ApiRequest, namespace: str, name: str) -> Reply:
        body = json.loads(request.body or b"{}")
        meta = body.get("metadata") or {}
        if meta.get("name") != name:
            return status_reply(400, "BadRequest", "the name of the object (%s) does not match the name on the URL (%s)"
                                % (meta.get("name"), name))
        with server.lock:
            key = ObjectKey(LEASES.api_version, "leases", namespace, name)
            stored = server.store.get(key)
            if stored is None:
                return status_reply(404, "NotFound", f'leases.coordination.k8s.io "{name}" not found',
                                    details={"name": name, "group": "coordination.k8s.io", "kind": "leases"})
            rv = meta.get("resourceVersion")
            if rv and rv != stored["metadata"].get("resourceVersion"):
                return status_reply(409, "Conflict", MODIFIED.format(name=name),
                                    details={"name": name, "group": "coordination.k8s.io", "kind": "leases"})
            server._rv += 1
            stored["spec"] = body.get("spec") or {}
            stored["metadata"]["resourceVersion"] = str(server._rv)
            return Reply(200, copy.deepcopy(stored))

    def lease(self, namespace: str, name: str) -> dict | None:
        return self.server.store.get(ObjectKey(LEASES.api_version, "leases", namespace, name))

    # -- events (events.k8s.io/v1 strict create validation, live-scheduling-facts.md section 5) --------
    def _create_event(self, server, request: ApiRequest, namespace: str) -> Reply:
        body = json.loads(request.body or b"{}")
        problems = []
        for key in ("eventTime", "reportingController", "reportingInstance", "action", "reason"):
            if not body.get(key):
                problems.append(f"{key}: Required value")
        for key in ("reportingInstance", "action", "reason"):
            if len(body.get(key) or "") > 128:
                problems.append(f"{key}: Too long: may not be more than 128 bytes")
        if len(body.get("note") or "") > 1024:
            problems.append("note: Too long: may not be more than 1024 bytes")
        if body.get("type") not in ("Normal", "Warning"):
            problems.append(f"type: Unsupported value: {body.get('type')!r}")
        for key in ("firstTimestamp", "lastTimestamp", "count", "source"):
            if body.get(key):
                problems.append(f"{key}: Invalid value: needs to be unset")
        name = (body.get("metadata") or {}).get("name", "")
        if problems:
            return status_reply(422, "Invalid", f'Event.events.k8s.io "{name}" is invalid: ' + ", ".join(problems))
        with server.lock:
            body["metadata"]["namespace"] = namespace
            server.add(body)
            self.events.append(copy.deepcopy(body))
        return Reply(201, body)


def _fullest(snap, feasible: list[str]) -> str:
    col = snap.column.get("nvidia.com/gpu")
    if col is None:
        return feasible[0]
    free = {n: int(snap.alloc[snap.index[n], col] - snap.requested[snap.index[n], col]) for n in feasible}
    return min(feasible, key=lambda n: (free[n], n))


def check_every_call(server, check: Callable[[ApiRequest, Reply], str | None]) -> list[str]:
    """Run `check` after every API call the server answers; returns the list its complaints go to."""
    problems: list[str] = []
    handle = server.handle

    def checked(request: ApiRequest) -> Reply:
        reply = handle(request)
        with server.lock:
            problem = check(request, reply)
        if problem:
            problems.append(f"{request.method} {request.path}: {problem}")
        return reply

    server.handle = checked
    return problems


__all__ = ["LEASES", "EVENTS", "Preemption", "SchedulerEmulator", "check_every_call"]
