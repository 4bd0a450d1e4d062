"""kubegpu in the scheduling path: the kube-scheduler HTTP extender, its decision log, and shadow mode.

wire (the extender/v1 types) <- podfacts, gpu_rules, state (a generation + assumed bindings) <- core,
filter, prioritize, preempt (the three verbs) <- service (bytes in, bytes out, records) <- app (ASGI);
ledger (the decision log), metrics, shadow (binds of any scheduler, judged).
"""
