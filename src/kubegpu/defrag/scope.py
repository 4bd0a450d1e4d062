"""A defrag plan for `-n NS` (kubectl's namespace scoping), shared by `kubegpu defrag` and `kubegpu serve`.

With a namespace only its pods may move, and the plan lists only their standings; without one
every namespace's pods may move and are listed.
"""

from __future__ import annotations

import msgspec

from kubegpu.defrag.evictability import EvictionPolicy
from kubegpu.defrag.plan import Plan
from kubegpu.model.namespaces import NamespaceScope


def namespace_policy(namespace: str | None, *, allow_local_storage: bool = False) -> EvictionPolicy:
    """The eviction policy of a run scoped to `namespace` (None: all namespaces)."""
    return EvictionPolicy(allow_local_storage=allow_local_storage,
                          namespaces=frozenset({namespace}) if namespace else None)


def plan_in_namespace(plan: Plan, namespace: str | None) -> Plan:
    """The plan with the standings of the pods of `namespace` only (what `-o json` prints)."""
    scope = NamespaceScope(namespace or None)
    if scope.all:
        return plan
    return msgspec.structs.replace(plan, pods=[s for s in plan.pods if scope.includes_pod_key(s.pod)])
