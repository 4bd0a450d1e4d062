"""Workload controllers and the pods they own, named and labelled as the real controllers do.

Each factory returns the controller, its intermediate objects (ReplicaSets) and its pods.
Status is left to `status.finalize`, which derives it from the pods so that the two never
disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from kubegpu.sources.demo.builders import clone, hex_token, obj, safe_token
from kubegpu.sources.demo.pods import PodPlacement, build_pod


@dataclass(frozen=True)
class Revision:
    """One template revision of a Deployment and the pods its ReplicaSet keeps."""

    number: int
    template: dict
    placements: tuple[PodPlacement, ...]
    created: datetime


def _with_labels(template: dict, labels: dict) -> dict:
    t = clone(template)
    t["metadata"]["labels"] = {**t["metadata"].get("labels", {}), **labels}
    return t


def deployment(name: str, namespace: str, *, replicas: int, revisions: list[Revision],
               created: datetime, labels: dict | None = None, annotations: dict | None = None,
               owner: dict | None = None, max_unavailable: str | int = "25%",
               max_surge: str | int = "25%", selector: dict | None = None) -> list[dict]:
    """A Deployment, one ReplicaSet per revision (the last is current) and their pods."""
    newest = revisions[-1]
    selector = dict(selector or newest.template["metadata"]["labels"])
    dep = obj("apps/v1", "Deployment", name, namespace, created=created, labels=labels or selector,
              annotations={"deployment.kubernetes.io/revision": str(newest.number), **(annotations or {})},
              generation=newest.number, owner=owner)
    dep["spec"] = {"progressDeadlineSeconds": 600, "replicas": replicas, "revisionHistoryLimit": 10,
                   "selector": {"matchLabels": selector},
                   "strategy": {"type": "RollingUpdate", "rollingUpdate": {
                       "maxSurge": max_surge, "maxUnavailable": max_unavailable}},
                   "template": clone(newest.template)}
    surge = max_surge if isinstance(max_surge, int) else math.ceil(replicas * int(max_surge[:-1]) / 100)
    out = [dep]
    for rev in revisions:
        pth = safe_token(f"pth/{namespace}/{name}/{rev.number}", 10)
        rs_name = f"{name}-{pth}"
        template = _with_labels(rev.template, {"pod-template-hash": pth})
        rs = obj("apps/v1", "ReplicaSet", rs_name, namespace, created=rev.created,
                 labels=template["metadata"]["labels"], generation=1 if rev is newest else 2, owner=dep,
                 annotations={"deployment.kubernetes.io/desired-replicas": str(replicas),
                              "deployment.kubernetes.io/max-replicas": str(replicas + surge),
                              "deployment.kubernetes.io/revision": str(rev.number)})
        rs["spec"] = {"replicas": len(rev.placements),
                      "selector": {"matchLabels": {**selector, "pod-template-hash": pth}},
                      "template": template}
        out.append(rs)
        for i, p in enumerate(rev.placements):
            pod_name = f"{rs_name}-{safe_token(f'{rs_name}/{i}')}"
            out.append(build_pod(template, name=pod_name, namespace=namespace, owner=rs, placement=p,
                                 created=p.started or rev.created))
    return out


def job(name: str, namespace: str, template: dict, *, placements: list[PodPlacement],
        created: datetime, parallelism: int, completions: int | None, indexed: bool = False,
        labels: dict | None = None, annotations: dict | None = None, backoff_limit: int = 6,
        subdomain: str | None = None, owner: dict | None = None) -> list[dict]:
    """A batch/v1 Job and its pods; Indexed jobs name pods <job>-<index>-<suffix>."""
    job_obj = obj("batch/v1", "Job", name, namespace, created=created, labels=labels,
                  annotations=annotations, generation=1, owner=owner)
    uid = job_obj["metadata"]["uid"]
    job_labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
                  "controller-uid": uid, "job-name": name}
    tmpl = _with_labels(template, job_labels)
    tmpl["spec"].setdefault("restartPolicy", "Never")
    if tmpl["spec"]["restartPolicy"] == "Always":
        tmpl["spec"]["restartPolicy"] = "Never"
    if subdomain:
        tmpl["spec"]["subdomain"] = subdomain
    job_obj["spec"] = {"backoffLimit": backoff_limit,
                       "completionMode": "Indexed" if indexed else "NonIndexed",
                       "manualSelector": False, "parallelism": parallelism,
                       "podReplacementPolicy": "TerminatingOrFailed",
                       "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
                       "suspend": False, "template": tmpl}
    if completions is not None:
        job_obj["spec"]["completions"] = completions
    out = [job_obj]
    for i, p in enumerate(placements):
        extra: dict = {}
        if indexed:
            extra = {"batch.kubernetes.io/job-completion-index": str(i)}
            pod_name = f"{name}-{i}-{safe_token(f'{namespace}/{name}/{i}')}"
        else:
            pod_name = f"{name}-{safe_token(f'{namespace}/{name}/{i}')}"
        t = clone(tmpl)
        if indexed:
            t["metadata"].setdefault("annotations", {})["batch.kubernetes.io/job-completion-index"] = str(i)
        out.append(build_pod(t, name=pod_name, namespace=namespace, owner=job_obj, placement=p,
                             created=p.started or created, extra_labels=extra,
                             hostname=f"{name}-{i}" if indexed and subdomain else None))
    return out


def statefulset(name: str, namespace: str, template: dict, *, service_name: str,
                placements: list[PodPlacement], created: datetime, labels: dict | None = None,
                volume_claim_templates: list[dict] | None = None,
                parallel: bool = False, owner: dict | None = None) -> list[dict]:
    """A StatefulSet and its ordinal pods <name>-<i>, each with hostname + subdomain set."""
    sts = obj("apps/v1", "StatefulSet", name, namespace, created=created, labels=labels,
              generation=1, owner=owner)
    revision = f"{name}-{safe_token('sts/' + namespace + '/' + name, 10)}"
    sts["spec"] = {"podManagementPolicy": "Parallel" if parallel else "OrderedReady",
                   "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                   "replicas": len(placements), "revisionHistoryLimit": 10,
                   "selector": {"matchLabels": dict(template["metadata"]["labels"])},
                   "serviceName": service_name, "template": clone(template),
                   "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}}
    if volume_claim_templates:
        sts["spec"]["volumeClaimTemplates"] = volume_claim_templates
    out = [sts]
    for i, p in enumerate(placements):
        pod_name = f"{name}-{i}"
        extra = {"controller-revision-hash": revision, "statefulset.kubernetes.io/pod-name": pod_name,
                 "apps.kubernetes.io/pod-index": str(i)}
        out.append(build_pod(template, name=pod_name, namespace=namespace, owner=sts, placement=p,
                             created=p.started or created, extra_labels=extra, hostname=pod_name,
                             subdomain=service_name))
    return out


def daemonset(name: str, namespace: str, template: dict, *, created: datetime,
              labels: dict | None = None) -> dict:
    """A DaemonSet (its pods come from `pods.daemonset_pods` once nodes exist)."""
    ds = obj("apps/v1", "DaemonSet", name, namespace, created=created, labels=labels, generation=1,
             annotations={"deprecated.daemonset.template.generation": "1"})
    ds["spec"] = {"revisionHistoryLimit": 10,
                  "selector": {"matchLabels": dict(template["metadata"]["labels"])},
                  "template": clone(template),
                  "updateStrategy": {"type": "RollingUpdate",
                                     "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}}
    return ds


def service(name: str, namespace: str, *, selector: dict | None, ports: list[dict], created: datetime,
            headless: bool = False, labels: dict | None = None, cluster_ip: str | None = None,
            publish_not_ready: bool = False) -> dict:
    """A Service; ClusterIPs are derived from the name inside EKS's 172.20.0.0/16."""
    svc = obj("v1", "Service", name, namespace, created=created, labels=labels)
    if headless:
        ip = "None"
    else:
        h = int(hex_token(f"svc/{namespace}/{name}", 6), 16)
        ip = cluster_ip or f"172.20.{(h >> 8) % 250 + 1}.{h % 250 + 2}"
    spec: dict = {"clusterIP": ip, "clusterIPs": [ip], "internalTrafficPolicy": "Cluster",
                  "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                  "ports": [{"protocol": "TCP", "targetPort": p.get("targetPort", p["port"]), **p}
                            for p in ports],
                  "sessionAffinity": "None", "type": "ClusterIP"}
    if selector:
        spec["selector"] = dict(selector)
    if publish_not_ready:
        spec["publishNotReadyAddresses"] = True
    svc["spec"] = spec
    svc["status"] = {"loadBalancer": {}}
    return svc


def pdb(name: str, namespace: str, *, selector: dict, created: datetime,
        min_available: int | str | None = None, max_unavailable: int | str | None = None,
        labels: dict | None = None) -> dict:
    """A policy/v1 PodDisruptionBudget (status from `status.finalize`)."""
    out = obj("policy/v1", "PodDisruptionBudget", name, namespace, created=created, labels=labels,
              generation=1)
    spec: dict = {"selector": {"matchLabels": dict(selector)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    out["spec"] = spec
    return out
