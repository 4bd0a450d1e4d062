"""A model of cluster-autoscaler's RunOnce loop: scale-up (estimator, expander) and scale-down.

Flag names and defaults are cluster-autoscaler's own (`config.py`); the loop lives in `loop.py`.
"""
