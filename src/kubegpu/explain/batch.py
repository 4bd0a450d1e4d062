"""`why --all`: a report per pending pod, one at a time, with the work shared between replicas.

Pending pods mostly come from controllers, so many share a template. Two keys say what may be
shared, and both are made of what the scheduling core reads, never of names:
- the *filter key* (requests, ports, volumes, tolerations, node selector and affinity, spread
  and pod (anti-)affinity, priority, nominated node; labels and namespace only when some filter
  reads them): pods with one filter key get the same verdict on every node, the same event
  message and the same preemption dry run, so the filters run once per key;
- the *shape key* (the filter key without labels, namespace, pod affinity and spread), used
  when the pod's own InterPodAffinity and PodTopologySpread pass on every node: then those
  filters do not constrain where it can go, so pods of one shape whose verdicts agree on every
  node (the filters still run per pod) share the whole report (preemption dry run, groups,
  pools) and the remedies (the move plan included), worded for each pod.
Reports are yielded one by one, so the caller can stream them; nothing holds pods x nodes.
"""

from __future__ import annotations

from collections.abc import Iterator

import hashlib

import msgspec
import numpy as np

from kubegpu.explain.remedies import MovePlanner, for_another_pod
from kubegpu.explain.nodesets import NodeSets
from kubegpu.explain.report import WhyReport, explain_pod, name_notes, observed_message, written_before
from kubegpu.model.kinds import Pod
from kubegpu.scheduling.cycle import FilterOutcome, filter_pod
from kubegpu.scheduling.gang import find_gangs
from kubegpu.scheduling.message import parse_event_message
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import KubeVersion, version_of

LABEL_FILTERS = ("InterPodAffinity", "PodTopologySpread")


def pending_pods(state, namespace: str | None = None) -> list[Pod]:
    """Pods waiting for a scheduler, optionally in one namespace."""
    return [p for p in state.unscheduled_pods if not namespace or (p.namespace or "default") == namespace]


def _containers(containers) -> list:
    """What the scheduling core reads of a container: resources, ports, restart policy."""
    return [(c.resources, c.ports, c.restart_policy) for c in containers]


def shape_key(state, pod: Pod, gang: str | None) -> bytes:
    """What the remedies read of a pod when labels do not matter to its placement."""
    spec = pod.spec
    return msgspec.json.encode([
        _containers(spec.containers), _containers(spec.init_containers), spec.overhead, spec.resources,
        spec.tolerations, spec.node_selector,
        spec.affinity.node_affinity if spec.affinity else None,
        spec.volumes, spec.resource_claims, spec.preemption_policy, spec.priority_class_name,
        state.priority_of(pod), spec.scheduler_name, pod.status.nominated_node_name, gang,
        pod.namespace if (spec.volumes or spec.resource_claims) else None])


def filter_key(state, pod: Pod, gang: str | None, labels_matter: bool) -> bytes:
    """What the filters read of a pod: its shape, plus labels and namespace when they count."""
    spec = pod.spec
    own = bool(spec.topology_spread_constraints or (spec.affinity and (spec.affinity.pod_affinity
                                                                       or spec.affinity.pod_anti_affinity)))
    extra = [pod.namespace, pod.labels, spec.affinity, spec.topology_spread_constraints] \
        if own or labels_matter else None
    return shape_key(state, pod, gang) + msgspec.json.encode(extra)


def labels_free(outcome: FilterOutcome) -> bool:
    """The pod's labels and pod affinity put no node out of reach: those filters pass everywhere."""
    if outcome.prefilter is not None:
        return False
    return all(not res.code.any() for name, res in zip(outcome.plugins, outcome.results) if name in LABEL_FILTERS)


def outcome_fingerprint(outcome: FilterOutcome) -> bytes:
    """A digest of every plugin's verdict on every node (codes, reasons) and the PreFilter result."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((outcome.prefilter, outcome.skipped, outcome.narrowed_by, outcome.plugins)).encode())
    h.update(outcome.first.tobytes())
    if outcome.allowed is not None:
        h.update(outcome.allowed.tobytes())
    for res in outcome.results:
        h.update(res.code.tobytes())
        h.update(np.where(res.code != 0, res.rid, -1).astype(np.int32).tobytes())
        h.update(repr(res.table).encode())
    return h.digest()


def iter_reports(state, *, namespace: str | None = None, version: KubeVersion | None = None,
                 gpu_only: bool = False, node_detail: bool | None = None, with_nodes: bool = False,
                 snapshot: SchedulingSnapshot | None = None, shared_node_sets: bool = True
                 ) -> Iterator[WhyReport]:
    """A report for every pending pod (every pending GPU pod with `gpu_only`), in pod order.

    With `shared_node_sets` (the `why --all` JSON), each set of group members is written once and
    referred to by id in later reports (explain.nodesets): read the reports in the order given."""
    v = version or version_of(state.server_version)
    snap = snapshot or SchedulingSnapshot.from_cluster(state)
    sets = NodeSets(snap.names) if shared_node_sets else None
    gangs = find_gangs(state)
    gang_of = {m.key: g.key for g in gangs.values() if len(g.members) > 1 for m in g.members}
    planner = MovePlanner(state, snapshot=snap, gangs=gangs)
    labels_matter = bool((snap.pod_anti & snap.alive).any())  # existing anti-affinity reads every pod's labels
    by_filter: dict[bytes, WhyReport] = {}
    by_outcome: dict[tuple[bytes, bytes], WhyReport] = {}
    remedies: dict[bytes, list] = {}
    for pod in pending_pods(state, namespace):
        if gpu_only and not state.gpu_demand(pod).is_gpu:
            continue
        gang = gang_of.get(pod.key)
        fkey = filter_key(state, pod, gang, labels_matter)
        first = by_filter.get(fkey)
        if first is not None:
            yield _replica(state, first, pod)
            continue
        outcome = filter_pod(snap, pod, version=v)
        free_of_labels = labels_free(outcome)
        okey = (shape_key(state, pod, gang), outcome_fingerprint(outcome)) if free_of_labels else None
        first = by_outcome.get(okey) if okey is not None else None
        if first is not None:  # same shape, same verdict on every node, labels put nothing out of reach
            by_filter[fkey] = first
            yield _replica(state, first, pod)
            continue
        rkey = (b"shape", okey[0]) if okey is not None else (b"filter", fkey)
        report = explain_pod(snap, pod, version=v, gangs=gangs, node_detail=node_detail, planner=planner,
                             with_nodes=with_nodes, outcome=outcome, remedy_cache=remedies, remedy_key=rkey,
                             node_sets=sets)
        by_filter[fkey] = report
        if okey is not None:
            by_outcome[okey] = report
        yield report


def _replica(state, first: WhyReport, pod: Pod) -> WhyReport:
    """The report of a pod with the same filter key as `first` (written before it): only names,
    notes and observations differ, and the node sets are referred to by id."""
    observed = observed_message(state, pod)
    return msgspec.structs.replace(
        first, pod=pod.key, remedies=for_another_pod(first.remedies, pod.key), notes=name_notes(pod),
        node_groups=written_before(first.node_groups),
        observed_message=observed, observed=parse_event_message(observed) if observed else None,
        matches_observed=(observed == first.message) if observed and first.message else None)


def explain_one(state, pod: Pod, *, version: KubeVersion | None = None) -> WhyReport:
    """`kubegpu why POD`: one pod's report (any phase), with every node's verdict and its gang."""
    return explain_pod(SchedulingSnapshot.from_cluster(state), pod, version=version, gangs=find_gangs(state))


def explain_all(state, **kwargs) -> list[WhyReport]:
    """Every report of `iter_reports` as a list (small clusters, tests, the doctor's summary)."""
    return list(iter_reports(state, **kwargs))


__all__ = ["iter_reports", "explain_one", "explain_all", "pending_pods", "filter_key", "shape_key", "labels_free"]
