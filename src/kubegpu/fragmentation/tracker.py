"""Incremental F_n(M) per node: `FragmentTracker`, defined next to the measure in the scheduling layer."""

from kubegpu.placement.tracker import FragmentTracker

__all__ = ["FragmentTracker"]
