"""Scale-down as cluster-autoscaler does it: eligibility, unneeded timers, the deletion planner."""
