"""Options every command shares: where the cluster comes from, and how output is written.

Sources, in precedence order: --demo [VARIANT], --snapshot PATH (repeatable), else the live
cluster of the kubeconfig (--kubeconfig, --context, $KUBECONFIG, in-cluster service account).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import click

from kubegpu.errors import UsageError

DEMO_VARIANTS = ("pitfalls", "clean")


@dataclass(frozen=True)
class SourceOptions:
    demo: str | None
    snapshots: tuple[str, ...]
    kubeconfig: str | None
    context: str | None
    namespace: str | None
    all_namespaces: bool
    k8s_version: str | None

    def describe(self) -> str:
        if self.demo:
            return f"demo:{self.demo}"
        if self.snapshots:
            return "snapshot:" + ",".join(self.snapshots)
        return f"live:{self.context or 'current-context'}"


def _demo_variant(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None or value in DEMO_VARIANTS:
        return value
    raise click.BadParameter(
        f"unknown demo variant {value!r} (choose from {', '.join(DEMO_VARIANTS)}); put other arguments "
        "before --demo, or write --demo=pitfalls", ctx=ctx, param=param)


def source_options(fn: Callable) -> Callable:
    """Add --demo/--snapshot/--kubeconfig/--context/-n/-A/--k8s-version and pass `source`."""

    @click.option("--demo", "demo", is_flag=False, flag_value="pitfalls", default=None, metavar="[VARIANT]",
                  callback=_demo_variant,
                  help="Use the embedded 40-node demo cluster ('pitfalls', the default, or 'clean').")
    @click.option("--snapshot", "snapshots", multiple=True, metavar="PATH",
                  help="Read a dump instead of a live cluster: JSON/YAML List, multi-doc YAML, a directory, "
                       ".gz, or '-' for stdin. Repeatable.")
    @click.option("--kubeconfig", metavar="FILE", envvar=None,
                  help="Kubeconfig file (default: $KUBECONFIG, merged as kubectl does, then ~/.kube/config).")
    @click.option("--context", metavar="NAME", help="Kubeconfig context to use (default: current-context).")
    @click.option("-n", "--namespace", metavar="NS", help="Only pods of this namespace (display filter).")
    @click.option("-A", "--all-namespaces", is_flag=True, help="Pods of all namespaces (the default).")
    @click.option("--k8s-version", metavar="VERSION",
                  help="Kubernetes version whose kube-scheduler wording to use (default: the cluster's, else newest).")
    @functools.wraps(fn)
    def wrapper(*args, demo, snapshots, kubeconfig, context, namespace, all_namespaces, k8s_version, **kwargs):
        if demo and snapshots:
            raise click.UsageError("--demo and --snapshot are two different sources; choose one")
        if namespace and all_namespaces:
            raise click.UsageError("-n/--namespace and -A/--all-namespaces exclude each other")
        source = SourceOptions(demo=demo, snapshots=tuple(snapshots), kubeconfig=kubeconfig, context=context,
                               namespace=namespace, all_namespaces=all_namespaces, k8s_version=k8s_version)
        return fn(*args, source=source, **kwargs)

    return wrapper


def output_option(*formats: str, default: str = "table") -> Callable:
    """-o/--output with the standard formats plus any extra ones a command supports."""
    choices = ("table", "wide", "json", "yaml", *formats)
    return click.option("-o", "--output", "output", type=click.Choice(choices), default=default,
                        show_default=True, help="Output format; json and yaml are stable, documented shapes.")


def read_documents(source: SourceOptions):
    """The raw documents of the chosen source (no decoding yet)."""
    from kubegpu.sources.documents import Documents

    if source.demo:
        from kubegpu.sources.demo import demo_objects

        docs = Documents(source=f"demo:{source.demo}")
        for obj in demo_objects(source.demo):
            docs.add(obj, f"demo:{source.demo}")
        return docs
    if source.snapshots:
        from kubegpu.sources.snapshot import read_snapshot

        docs = Documents(source="snapshot:" + ",".join(source.snapshots))
        for path in source.snapshots:
            docs.extend(read_snapshot(path))
        return docs
    from kubegpu.sources.live import read_live

    return read_live(kubeconfig=source.kubeconfig, context=source.context)


def load_state(source: SourceOptions):
    """The ClusterState of the chosen source; --k8s-version overrides the recorded version."""
    from kubegpu.sources.documents import load_cluster

    state = load_cluster(read_documents(source))
    if source.k8s_version:
        version = source.k8s_version if source.k8s_version.startswith("v") else "v" + source.k8s_version
        if not version[1:2].isdigit():
            raise UsageError(f"--k8s-version {source.k8s_version!r} is not a version like 1.34 or v1.34.1")
        state.server_version = version
    return state
