"""One faithful implementation of kube-scheduler semantics (filters, preemption, gangs) and the
placement policies, shared by why, frag, defrag, simulate and the dashboard."""
