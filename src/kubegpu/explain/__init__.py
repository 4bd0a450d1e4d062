"""Explaining Pending pods: the event text kube-scheduler would write, every blocker per node,
nodes grouped by pool, gangs as one unit, and remedies ranked by how small a change they ask."""

from kubegpu.explain.batch import explain_all, iter_reports
from kubegpu.explain.report import WhyReport, explain_pod

__all__ = ["WhyReport", "explain_all", "explain_pod", "iter_reports"]
