"""`kubegpu rebalance`: keep the cluster compact on its own, reserving each destination before a move.

    trigger.py      when a round is due (a GPU pod or gang waits too long; stranded GPUs persist)
    budget.py       what a round may spend (moves, per node, GPU-hours per round and day, windows)
    round.py        which plans, smallest first (the defrag planner), and the round's report
    reservation.py  placeholder pods that hold destinations (lowest priority, pinned by affinity)
    move.py         one plan: reserve, then the defrag executor (its gate, journal, Eviction API)
    controller.py   a round, dry or live: leftovers, resume, plans, ledger
    leader.py       Lease leader election for loop mode
    ledger.py       budget spending across runs
    metrics.py      kubegpu_rebalance_* and the /metrics exporter
"""
