"""The default profile: kube-scheduler's PreFilter/Filter plugins in upstream order.

upstream pkg/scheduler/apis/config/v1/default_plugins.go (multiPoint), with DynamicResources
inserted before DefaultPreemption since 1.34. The first failing plugin decides a node's
reasons in the event message; kubegpu runs them all to show every blocker.
"""

from __future__ import annotations

from kubegpu.scheduling.filters.dynamicresources import DynamicResourcesFilter
from kubegpu.scheduling.filters.interpodaffinity import InterPodAffinityFilter
from kubegpu.scheduling.filters.nodeaffinity import NodeAffinityFilter
from kubegpu.scheduling.filters.nodename import NodeNameFilter
from kubegpu.scheduling.filters.nodeports import NodePortsFilter
from kubegpu.scheduling.filters.noderesources import NodeResourcesFitFilter
from kubegpu.scheduling.filters.nodeunschedulable import NodeUnschedulableFilter
from kubegpu.scheduling.filters.nodevolumelimits import NodeVolumeLimitsFilter
from kubegpu.scheduling.filters.podtopologyspread import PodTopologySpreadFilter
from kubegpu.scheduling.filters.tainttoleration import TaintTolerationFilter
from kubegpu.scheduling.filters.volumebinding import VolumeBindingFilter
from kubegpu.scheduling.filters.volumerestrictions import VolumeRestrictionsFilter
from kubegpu.scheduling.filters.volumezone import VolumeZoneFilter
from kubegpu.scheduling.framework import FilterPlugin

DEFAULT_FILTERS: tuple[FilterPlugin, ...] = (
    NodeUnschedulableFilter(),
    NodeNameFilter(),
    TaintTolerationFilter(),
    NodeAffinityFilter(),
    NodePortsFilter(),
    NodeResourcesFitFilter(),
    VolumeRestrictionsFilter(),
    NodeVolumeLimitsFilter(),
    VolumeBindingFilter(),
    VolumeZoneFilter(),
    PodTopologySpreadFilter(),
    InterPodAffinityFilter(),
    DynamicResourcesFilter(),
)

FILTER_NAMES: tuple[str, ...] = tuple(p.name for p in DEFAULT_FILTERS)
NOT_EVALUATED: tuple[str, ...] = tuple(p.name for p in DEFAULT_FILTERS if not p.evaluated)
