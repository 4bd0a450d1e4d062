"""Helpers shared by the audit tests: where the fixtures are, and how to load one."""

from __future__ import annotations

from pathlib import Path

from kubegpu.sources.documents import load_cluster
from kubegpu.sources.snapshot import read_snapshot

HERE = Path(__file__).parent


def load(path: str | Path):
    """A fixture file (multi-document YAML of v1 objects) as a ClusterState."""
    return load_cluster(read_snapshot(str(path)))


def demo_state(variant: str):
    from kubegpu.cli.options import SourceOptions, load_state

    return load_state(SourceOptions(demo=variant, snapshots=(), kubeconfig=None, context=None, namespace=None,
                                    all_namespaces=False, k8s_version=None))
