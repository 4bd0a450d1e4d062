"""Run one plugin of the default profile the way upstream's plugin unit tests do.

Upstream's plugin tests call PreFilter then Filter of a single plugin on every node; kubegpu
runs the whole profile, so `plugin_statuses` reads that one plugin's verdict per node from the
FilterOutcome (a skipped plugin passes every node, as upstream's Skip does). The builders turn
upstream's st.MakePod()/st.MakeNode() idioms into v1 wire dicts, decoded like a real dump;
upstream's empty namespace "" becomes "default" (only equality between namespaces matters).
"""

from __future__ import annotations

from sched_builders import cluster, node, obj, pod

from kubegpu.scheduling.framework import Code, Status
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion
from kubegpu.scheduling.cycle import filter_pod

V = KubeVersion(1, 36, 3)  # default configuration of the newest release
TARGET = "incoming"


def _ns(ns: str | None) -> str:
    return ns or "default"


def sel(*requirements, labels=None) -> dict:
    """A LabelSelector: requirements are (key, op) or (key, op, values)."""
    out: dict = {}
    if labels:
        out["matchLabels"] = dict(labels)
    if requirements:
        out["matchExpressions"] = [{"key": r[0], "operator": r[1], **({"values": list(r[2])} if len(r) > 2 else {})}
                                   for r in requirements]
    return out


def term(selector: dict | None, topology: str = "", *, namespaces=None, ns_selector=None) -> dict:
    """A PodAffinityTerm (st.PodAffinityIn / PodAffinityExists ...)."""
    t: dict = {"topologyKey": topology}
    if selector is not None:
        t["labelSelector"] = selector
    if namespaces:
        t["namespaces"] = list(namespaces)
    if ns_selector is not None:
        t["namespaceSelector"] = ns_selector
    return t


def affinity(aff=(), anti=()) -> dict:
    out: dict = {}
    if aff:
        out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(aff)}
    if anti:
        out["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(anti)}
    return out


def spread(max_skew, key, selector=None, min_domains=None, affinity_policy=None, taints_policy=None,
           match_label_keys=None, when="DoNotSchedule") -> dict:
    """st.SpreadConstraint(maxSkew, key, when, selector, minDomains, nodeAffinityPolicy, nodeTaintsPolicy, keys)."""
    c: dict = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = selector
    if min_domains is not None:
        c["minDomains"] = min_domains
    if affinity_policy:
        c["nodeAffinityPolicy"] = affinity_policy
    if taints_policy:
        c["nodeTaintsPolicy"] = taints_policy
    if match_label_keys:
        c["matchLabelKeys"] = list(match_label_keys)
    return c


def node_affinity(key, op, values) -> dict:
    """st.NodeAffinityIn / NodeAffinityNotIn (one required term, matchExpressions)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}]}}}


UNSCHEDULABLE_TAINT = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]


def unode(name: str, labels: dict | None = None, taints=None) -> dict:
    return node(name, labels=labels or {}, taints=taints)


def upod(name: str, *, ns: str | None = "", node_name: str | None = None, labels=None, aff=None,
         constraints=None, node_selector=None, tolerations=None, terminating=False) -> dict:
    p = pod(name, ns=_ns(ns), node_name=node_name, labels=labels or {}, affinity=aff, spread=constraints,
            node_selector=node_selector, tolerations=tolerations)
    if terminating:
        p["metadata"]["deletionTimestamp"] = "2026-11-30T11:00:00Z"
    return p


def namespace(name: str, labels: dict | None = None) -> dict:
    return obj("Namespace", name, metadata={"labels": labels or {}})


def existing(*pods: dict) -> list[dict]:
    """Existing pods get distinct names (upstream leaves most of them unnamed)."""
    out = []
    for k, p in enumerate(pods):
        p = {**p, "metadata": {**p["metadata"], "name": f"{p['metadata']['name'] or 'e'}-{k}"}}
        p["metadata"]["uid"] = f"uid-{p['metadata']['namespace']}-{p['metadata']['name']}"
        out.append(p)
    return out


def plugin_statuses(plugin: str, incoming: dict, nodes: list[dict], pods=(), objs=()) -> list[Status]:
    """The plugin's own Status on every node (PreFilter rejection repeated, Skip = Success)."""
    incoming = {**incoming, "metadata": {**incoming["metadata"], "name": TARGET}}
    incoming["spec"] = {k: v for k, v in incoming["spec"].items() if k != "nodeName"}
    incoming["status"] = {"phase": "Pending"}
    st = cluster(*nodes, *existing(*pods), *objs, incoming)
    snap = SchedulingSnapshot.from_cluster(st)
    out = filter_pod(snap, st.pod(incoming["metadata"]["namespace"], TARGET), version=V)
    n = len(snap.nodes)
    if out.prefilter is not None:
        return [out.prefilter] * n
    if plugin in out.skipped or plugin not in out.plugins:
        return [Status(plugin=plugin)] * n
    res = out.results[out.plugins.index(plugin)]
    return [res.status(i, plugin) for i in range(n)]


def verdict(status: Status) -> tuple[str, tuple[str, ...]]:
    """(upstream code name, reasons) of a Status, for comparing with upstream's wantStatus."""
    if status.code == Code.SUCCESS:
        return ("Success", ())
    return (status.code.upstream, status.reasons)
