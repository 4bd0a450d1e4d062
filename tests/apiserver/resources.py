"""The resource types the test API server knows: what discovery advertises and lists serve.

Written from the Kubernetes API reference, independently of kubegpu's own table, so a wrong
plural or group in kubegpu shows up as a failing test instead of agreeing with itself.
"""

from __future__ import annotations

from dataclasses import dataclass

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "delete", "deletecollection", "patch", "update")


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    custom: bool = False  # CRDs: list items carry apiVersion/kind, built-in lists leave them out
    verbs: tuple[str, ...] = READ_VERBS + WRITE_VERBS

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def singular(self) -> str:
        return self.kind.lower()

    def discovery(self) -> dict:
        """This type as an APIResourceList entry."""
        entry = {"name": self.plural, "singularName": self.singular, "namespaced": self.namespaced,
                 "kind": self.kind, "verbs": list(self.verbs)}
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        return entry


def _t(api_version: str, plural: str, kind: str, namespaced: bool, *short: str, custom: bool = False) -> ResourceType:
    group, _, version = api_version.rpartition("/")
    return ResourceType(group, version, plural, kind, namespaced, tuple(short), custom)


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _t("v1", "nodes", "Node", False, "no"),
    _t("v1", "pods", "Pod", True, "po"),
    _t("v1", "namespaces", "Namespace", False, "ns"),
    _t("v1", "events", "Event", True, "ev"),
    _t("v1", "services", "Service", True, "svc"),
    _t("v1", "configmaps", "ConfigMap", True, "cm"),
    _t("v1", "secrets", "Secret", True),
    _t("v1", "serviceaccounts", "ServiceAccount", True, "sa"),
    _t("v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, "pvc"),
    _t("v1", "persistentvolumes", "PersistentVolume", False, "pv"),
    _t("v1", "resourcequotas", "ResourceQuota", True, "quota"),
    _t("v1", "limitranges", "LimitRange", True, "limits"),
    _t("apps/v1", "deployments", "Deployment", True, "deploy"),
    _t("apps/v1", "statefulsets", "StatefulSet", True, "sts"),
    _t("apps/v1", "daemonsets", "DaemonSet", True, "ds"),
    _t("apps/v1", "replicasets", "ReplicaSet", True, "rs"),
    _t("batch/v1", "jobs", "Job", True),
    _t("batch/v1", "cronjobs", "CronJob", True, "cj"),
    _t("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True, "pdb"),
    _t("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", False, "pc"),
    _t("storage.k8s.io/v1", "storageclasses", "StorageClass", False, "sc"),
    _t("storage.k8s.io/v1", "csinodes", "CSINode", False),
    _t("storage.k8s.io/v1", "volumeattachments", "VolumeAttachment", False),
    _t("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", True, "netpol"),
    _t("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True, "hpa"),
    _t("events.k8s.io/v1", "events", "Event", True, "ev"),
    _t("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False),
)

# CRDs are served only once registered (or once an object of theirs is added), as on a real cluster.
_CRDS = (
    _t("scheduling.x-k8s.io/v1alpha1", "podgroups", "PodGroup", True, "pg", custom=True),
    _t("scheduling.volcano.sh/v1beta1", "podgroups", "PodGroup", True, "pg", custom=True),
    _t("karpenter.sh/v1", "nodepools", "NodePool", False, custom=True),
    _t("monitoring.coreos.com/v1", "prometheusrules", "PrometheusRule", True, "promrule", custom=True),
    _t("monitoring.coreos.com/v1", "prometheuses", "Prometheus", True, "prom", custom=True),
    _t("nvidia.com/v1", "clusterpolicies", "ClusterPolicy", False, custom=True),
    _t("serving.kserve.io/v1alpha1", "localmodelcaches", "LocalModelCache", False, custom=True),
    _t("serving.kserve.io/v1alpha1", "localmodelnodegroups", "LocalModelNodeGroup", False, custom=True),
    _t("serving.kserve.io/v1alpha1", "localmodelnodes", "LocalModelNode", False, custom=True),
    _t("serving.kserve.io/v1beta1", "inferenceservices", "InferenceService", True, "isvc", custom=True),
)
CRD_TYPES: dict[tuple[str, str], ResourceType] = {(t.api_version, t.kind): t for t in _CRDS}
