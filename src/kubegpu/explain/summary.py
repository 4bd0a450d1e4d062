"""One line per Pending GPU pod for `kubegpu doctor`: the reason in kube-scheduler's words and
the first remedy."""

from __future__ import annotations

import msgspec

from kubegpu.explain.batch import explain_all
from kubegpu.model.cluster import ClusterState
from kubegpu.scheduling.versions import version_of


class PendingSummary(msgspec.Struct):
    pod: str
    reason: str            # the event message, as kube-scheduler would write it
    first_remedy: str      # summary of the top-ranked remedy ("" when none applies)
    remedy_kind: str = ""
    gang: str | None = None


def pending_summary(state: ClusterState, *, version: str | None = None,
                    namespace: str | None = None) -> list[PendingSummary]:
    """Per Pending GPU pod (of `namespace` when given): the one-line reason and its first remedy
    (schedulable pods skipped)."""
    v = version_of(state.server_version, version)
    out = []
    for r in explain_all(state, version=v, gpu_only=True, node_detail=False, namespace=namespace):
        if r.schedulable:
            continue
        first = r.remedies[0] if r.remedies else None
        out.append(PendingSummary(pod=r.pod, reason=r.message, first_remedy=first.summary if first else "",
                                  remedy_kind=first.kind if first else "", gang=r.gang.summary if r.gang else None))
    return out
