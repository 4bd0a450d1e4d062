"""Placement: columnar cluster state, the task struct, and the policies that choose node + devices.

    state = PlacementState.from_node_table(table)
    policy = make_policy("kubegpu", mix=mix)            # registry.py lists every policy
    where = policy.choose(state, task, state.fit_mask(task))
"""

from kubegpu.placement.state import PlacementState
from kubegpu.placement.task import Placement, Task

__all__ = ["Placement", "PlacementState", "Task"]
