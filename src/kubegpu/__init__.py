"""kubegpu: find, explain, simulate and fix the classic Kubernetes GPU-cluster pitfalls."""

__version__ = "0.1.0"
