"""The command-line face of kubegpu (`kubegpu ...` and `kubectl gpu ...`)."""
