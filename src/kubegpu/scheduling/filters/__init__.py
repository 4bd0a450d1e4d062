"""One module per filter plugin of kube-scheduler's default profile, reason strings on top."""
