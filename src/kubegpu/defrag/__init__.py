"""Defrag: plan the fewest safe moves that make room (planner), and carry them out without losing work (executor).

    from kubegpu.defrag import Goal, plan_defrag
    plan = plan_defrag(state, Goal(kind="size", size=4))

Safety rules live in `evictability` (and PDB budgets in `budget`); every strategy and the
executor go through them.
"""

from kubegpu.defrag.evictability import EvictionPolicy
from kubegpu.defrag.plan import Goal, Move, Plan
from kubegpu.defrag.planner import after_state, plan_defrag

__all__ = ["EvictionPolicy", "Goal", "Move", "Plan", "after_state", "plan_defrag"]
