"""Options every command shares: where the cluster comes from, and how output is written.

Sources, in precedence order: --demo [VARIANT], --snapshot PATH (repeatable), else the live
cluster of the kubeconfig (--kubeconfig, --context, $KUBECONFIG, in-cluster service account).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import click

from kubegpu.errors import InputError, UsageError
from kubegpu.model.integers import int_or_none, shown
from kubegpu.model.namespaces import NamespaceScope, namespace_note
from kubegpu.simulate.limits import MAX_SEEDS, SEED_MAX
from kubegpu.guards.bounded import path_text

DEMO_VARIANTS = ("pitfalls", "clean")
ORIGINS = "kubegpu.origins"  # ctx.meta key: object ref -> snapshot file it came from


def name_origin(err: InputError, ctx: click.Context) -> None:
    """Give an error about an object read from a snapshot the file it came from (as kubectl names it)."""
    origin = ctx.meta.get(ORIGINS, {}).get(err.obj) if err.where is None and err.obj else None
    if origin:
        err.where = origin


@dataclass(frozen=True)
class SourceOptions:
    demo: str | None
    snapshots: tuple[str, ...]
    kubeconfig: str | None
    context: str | None
    namespace: str | None
    all_namespaces: bool
    k8s_version: str | None
    prices: str | None = None

    @property
    def namespace_scope(self) -> NamespaceScope:
        """-n NS, or every namespace (-A, the default)."""
        return NamespaceScope(None if self.all_namespaces else self.namespace)

    def scope(self, state) -> NamespaceScope:
        """The scope of this run on `state`; an unknown or pod-less namespace is a one-line note on
        stderr, the same for every command."""
        scope = self.namespace_scope
        note = namespace_note(state, scope)
        if note:
            click.echo(note, err=True)
        return scope

    def describe(self) -> str:
        if self.demo:
            return f"demo:{self.demo}"
        if self.snapshots:
            return "snapshot:" + ",".join(path_text(p) for p in self.snapshots)
        return f"live:{self.context or 'current-context'}"


def _demo_variant(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None or value in DEMO_VARIANTS:
        return value
    raise click.BadParameter(
        f"unknown demo variant {value!r} (choose from {', '.join(DEMO_VARIANTS)}); put other arguments "
        "before --demo, or write --demo=pitfalls", ctx=ctx, param=param)


def source_options(fn: Callable | None = None, *, namespaces: bool = True, k8s_version: bool = True) -> Callable:
    """Add --demo/--snapshot/--kubeconfig/--context (and -n/-A, --k8s-version) and pass `source`.

    A command that cannot honour -n/-A or --k8s-version says `namespaces=False` / `k8s_version=False`,
    so `--help` lists only options that work there.
    """
    if fn is None:
        return functools.partial(source_options, namespaces=namespaces, k8s_version=k8s_version)

    @functools.wraps(fn)
    def wrapper(*args, demo, snapshots, kubeconfig, context, namespace=None, all_namespaces=False,
                k8s_version=None, prices=None, **kwargs):
        if demo and snapshots:
            raise click.UsageError("--demo and --snapshot are two different sources; choose one")
        if (demo or snapshots) and (context or kubeconfig):
            flag = "--context" if context else "--kubeconfig"
            raise click.UsageError(f"{flag} selects a live cluster, {'--demo' if demo else '--snapshot'} "
                                   "another source; choose one")
        if namespace and all_namespaces:
            raise click.UsageError("-n/--namespace and -A/--all-namespaces exclude each other")
        source = SourceOptions(demo=demo, snapshots=tuple(snapshots), kubeconfig=kubeconfig, context=context,
                               namespace=namespace, all_namespaces=all_namespaces, k8s_version=k8s_version,
                               prices=prices)
        return fn(*args, source=source, **kwargs)

    options = [
        click.option("--demo", "demo", is_flag=False, flag_value="pitfalls", default=None, metavar="[VARIANT]",
                     callback=_demo_variant,
                     help="Use the embedded 40-node demo cluster ('pitfalls', the default, or 'clean')."),
        click.option("--snapshot", "snapshots", multiple=True, metavar="PATH",
                     help="Read a dump instead of a live cluster: JSON/YAML List, multi-doc YAML, a directory, "
                          ".gz, or '-' for stdin. Repeatable."),
        click.option("--kubeconfig", metavar="FILE", envvar=None,
                     help="Kubeconfig file (default: $KUBECONFIG, merged as kubectl does, then ~/.kube/config)."),
        click.option("--context", metavar="NAME", help="Kubeconfig context to use (default: current-context)."),
        click.option("--prices", "prices", metavar="FILE",
                     help="Hourly prices (YAML) per pool, instance type or GPU model, to put money on stranded "
                          "GPUs, waits and plans (default: the demo's article price, else built-in list "
                          "prices of known instance types; none: GPU-hours only)."),
    ]
    if namespaces:
        options += [
            click.option("-n", "--namespace", metavar="NS", help="Only this namespace's pods (for defrag: the pods a plan may move); nodes and capacity stay cluster-wide."),
            click.option("-A", "--all-namespaces", is_flag=True, help="Pods of all namespaces (the default)."),
        ]
    if k8s_version:
        options.append(click.option(
            "--k8s-version", metavar="VERSION",
            help="Kubernetes version whose kube-scheduler wording to use (default: the cluster's, else newest)."))
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


STANDARD_FORMATS = ("table", "wide", "json", "yaml")
_LEGACY_FILE = "kubegpu.legacy_output_file"
_LEGACY_NOTE = "kubegpu.legacy_output_note"


def output_option(*formats: str, default: str | None = "table", standard: tuple[str, ...] = STANDARD_FORMATS,
                  legacy_file: bool = False) -> Callable:
    """-o/--output FORMAT: the standard formats plus any extra ones a command supports.

    Accepts kubectl's `-o=json` as well as `-o json` and `--output=json`. With `legacy_file`, a
    value that is not a format name is taken as the output file (the old `-o FILE` of snapshot and
    rules); `file_option` picks it up and prints a one-line deprecation note once the command has
    succeeded (a command that fails prints only its error line).
    """
    choices = (*standard, *formats)

    def check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None:
            return None
        fmt = value[1:] if value.startswith("=") else value
        if fmt in choices:
            return fmt
        if legacy_file and fmt:
            ctx.meta[_LEGACY_FILE] = fmt
            ctx.meta[_LEGACY_NOTE] = f"note: -o FILE is deprecated; use --file {fmt} (-o is the format: " \
                                     f"{'|'.join(choices)})"
            return None
        raise click.BadParameter(f"{value!r} is not one of {', '.join(choices)}", ctx=ctx, param=param)

    return click.option("-o", "--output", "output", default=default, callback=check, show_default=default is not None,
                        metavar="[" + "|".join(choices) + "]",
                        help="Output format; json and yaml are stable, documented shapes.")


def file_option(help: str = "Write the output to FILE (atomically; '-' is stdout) instead of stdout.") -> Callable:
    """--file PATH: where a command writes its output (see render.open_output), passed as `file`.

    Also receives the path of a deprecated `-o FILE` (output_option(legacy_file=True)).
    """

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, file, **kwargs):
            meta = click.get_current_context().meta
            legacy = meta.get(_LEGACY_FILE)
            if legacy and file:
                raise click.UsageError(f"-o {legacy} names a file and so does --file {file}; use --file only")
            try:
                result = fn(*args, file=file or legacy, **kwargs)
            except click.exceptions.Exit as done:  # exit 1 = findings: the command itself worked
                if done.exit_code in (0, 1) and legacy:
                    click.echo(meta[_LEGACY_NOTE], err=True)
                raise
            if legacy:
                click.echo(meta[_LEGACY_NOTE], err=True)  # one note, after success: an error stays one line
            return result

        return click.option("--file", "file", metavar="FILE", default=None, help=help)(wrapper)

    return decorate


def format_for_file(output: str | None, file: str | None, default: str = "json") -> str:
    """The format to write: the -o given, else what the file name says (.yaml/.yml), else `default`."""
    if output:
        return output
    name = (file or "").removesuffix(".gz").lower()
    if name.endswith((".yaml", ".yml")):
        return "yaml"
    if name.endswith(".json"):
        return "json"
    return default


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

        docs = Documents(source="snapshot:" + ",".join(path_text(p) for p in source.snapshots))
        for path in source.snapshots:
            docs.extend(read_snapshot(path))
        return docs
    from kubegpu.sources.live import read_live

    return read_live(kubeconfig=source.kubeconfig, context=source.context)


def load_prices(source: SourceOptions):
    """The PriceBook in force: --prices FILE, else the demo's price (with --demo), else list prices."""
    from kubegpu.money.prices import LIST_PRICES_BOOK, parse_prices, read_prices

    if source.prices:
        return read_prices(source.prices)
    if source.demo:
        from kubegpu.sources.demo.prices import DEMO_PRICES_YAML

        return parse_prices(DEMO_PRICES_YAML, where="demo prices", origin="demo")
    return LIST_PRICES_BOOK


def wording_version(source: SourceOptions) -> str | None:
    """--k8s-version as "v1.34[.1]" (None without it); it picks kube-scheduler's wording only."""
    if not source.k8s_version:
        return None
    version = source.k8s_version if source.k8s_version.startswith("v") else "v" + source.k8s_version
    if not version[1:2].isdigit():
        raise UsageError(f"--k8s-version {source.k8s_version!r} is not a version like 1.34 or v1.34.1")
    return version


def load_state(source: SourceOptions):
    """The ClusterState of the chosen source; --k8s-version sets the wording (`state.k8s_version`),
    never the cluster's reported `server_version`."""
    from kubegpu.sources.documents import load_cluster

    version = wording_version(source)  # a bad version is refused before anything is read
    state = load_cluster(read_documents(source), one_shot=True)  # a command keeps its cluster to the end
    ctx = click.get_current_context(silent=True)
    if ctx is not None and source.snapshots:  # an engine's error about an object then names its file
        ctx.meta[ORIGINS] = state.origins
    state.k8s_version = version
    return state


def check_seeds(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    """Callback for a --seeds option ('42-51', '1,2,7') -> the seeds, in order; the one seed-range parser.

    Ranges within 0..2^32-1 and at most MAX_SEEDS seeds in all, checked before anything expands a
    range, so `--seeds 1-1e12` costs nothing.
    """
    if value is None:
        return None
    ranges: list[range] = []
    total = 0
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        first, last = int_or_none(lo, lo=0), int_or_none(hi if sep else lo, lo=0)
        if first is None or last is None:
            raise click.BadParameter(f"{shown(value)}: expected numbers or ranges like 42-51", ctx=ctx, param=param)
        if last > SEED_MAX or first > last:
            raise click.BadParameter(f"{shown(part)}: seeds go from 0 to {SEED_MAX}, low to high", ctx=ctx, param=param)
        total += last - first + 1
        if total > MAX_SEEDS:
            raise click.BadParameter(f"{shown(value)} is more than {MAX_SEEDS} seeds", ctx=ctx, param=param)
        ranges.append(range(first, last + 1))
    if not ranges:
        raise click.BadParameter("no seed given", ctx=ctx, param=param)
    return [seed for r in ranges for seed in r]
