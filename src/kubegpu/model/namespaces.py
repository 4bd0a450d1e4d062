"""-n/--namespace and -A/--all-namespaces as kubectl means them, for every command that reads pods.

kubegpu always reads the whole cluster, because capacity is shared: a namespace's pods compete with
every other pod for the same nodes. `-n NS` narrows what is *reported* to namespaced objects of NS
(pods, and findings about objects of NS); cluster-scoped things (nodes, StorageClasses,
PriorityClasses, findings about the cluster as a whole) stay, labelled "cluster". No `-n` (or `-A`)
means all namespaces. kubegpu has no "current namespace": a kubeconfig context's namespace is not
applied, so a report never silently hides pods.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubegpu.model.cluster import ClusterState

CLUSTER_SCOPE = "cluster"
NAMESPACE_SCOPE = "namespace"


@dataclass(frozen=True)
class NamespaceScope:
    """The namespace a report is narrowed to (None: all namespaces)."""

    namespace: str | None = None

    @property
    def all(self) -> bool:
        return self.namespace is None

    def includes(self, namespace: str | None) -> bool:
        """Whether an object of `namespace` ('' or None: cluster-scoped) is reported."""
        return self.namespace is None or not namespace or namespace == self.namespace

    def includes_pod_key(self, key: str) -> bool:
        """The same for a pod key 'namespace/name'."""
        return self.includes(key.partition("/")[0])

    def includes_ref(self, ref: str) -> bool:
        """The same for a 'Kind/ns/name' (namespaced) or 'Kind/name' (cluster-scoped) reference."""
        return self.includes(ref_namespace(ref))


def ref_namespace(ref: str) -> str:
    """The namespace of a 'Kind/ns/name' reference; '' for 'Kind/name' (cluster-scoped)."""
    parts = ref.split("/")
    return parts[1] if len(parts) >= 3 else ""


def ref_scope(ref: str) -> str:
    """'namespace' for a namespaced object reference, 'cluster' for a cluster-scoped one."""
    return NAMESPACE_SCOPE if ref_namespace(ref) else CLUSTER_SCOPE


def cluster_namespaces(state: ClusterState) -> set[str]:
    """Namespaces the state knows: Namespace objects, and the namespace of every namespaced object."""
    names = {ns.name for ns in state.of_kind("Namespace")}
    names.update(o.metadata.namespace for o in state.objects if o.metadata.namespace)
    return names


def namespace_note(state: ClusterState, scope: NamespaceScope) -> str | None:
    """A one-line note when -n names a namespace that is unknown or has no pods, else None."""
    ns = scope.namespace
    if ns is None:
        return None
    known = cluster_namespaces(state)
    if ns not in known:
        listed = ", ".join(sorted(known)[:12]) + (", ..." if len(known) > 12 else "")
        return (f"note: namespace {ns!r} not found in {state.source or 'the cluster'} "
                f"(namespaces: {listed or 'none'}); only cluster-scoped results are shown")
    if not any(p.namespace == ns for p in state.pods):
        return f"note: no pods in namespace {ns!r}"
    return None
