"""On resume: settle every intent the journal holds without an outcome (a crash came between the two).

The live cluster decides, and the settlement is journaled before anything else happens:
  - `cordon-request` without `cordoned`: the node was schedulable when the intent was written, so
    if it is cordoned now the cordon is ours (`cordoned`), else it never landed (`cordon-not-applied`);
  - `cordoned` without `uncordoned`, but the node is schedulable now (an undo whose record was
    lost, or someone uncordoned it): no longer ours to undo (`uncordoned`);
  - `evict-request` without `evicted`: a pod that is gone, replaced (another uid) or terminating
    was evicted (`evicted`); one still running was not, and the step evicts it (after the gate).
"""

from __future__ import annotations

from collections.abc import Callable

from kubegpu.defrag.api import ClusterApi, PodView
from kubegpu.defrag.journal import Journal, JournalState


def reconcile(api: ClusterApi, journal: Journal, st: JournalState,
              get_pod: Callable[[str, str], PodView | None]) -> None:
    """Bring `st` (and the journal) in line with the live cluster; `get_pod` retries lost connections."""
    for node in list(st.cordon_requested):
        if api.node_unschedulable(node):
            journal.record("cordoned", node=node, note="reconciled on resume")
            st.cordoned.append(node)
        else:
            journal.record("cordon-not-applied", node=node)
        st.cordon_requested.remove(node)
    for node in list(st.cordoned):
        if not api.node_unschedulable(node):
            journal.record("uncordoned", node=node, note="found schedulable on resume")
            st.cordoned.remove(node)
    for uid, rec in st.requested.items():
        if uid in st.evicted:
            continue
        ns, _, name = rec["pod"].partition("/")
        current = get_pod(ns, name)
        if current is None or current.uid != uid or current.terminating:
            journal.record("evicted", uid=uid, pod=rec["pod"], note="found gone on resume")
            st.evicted.add(uid)
