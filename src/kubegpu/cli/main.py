"""Entry point and the one registry of commands.

Commands are imported lazily so `kubectl gpu status` starts fast: only the module of the
command that runs is imported. Errors from kubegpu become one line on stderr and exit 2.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from kubegpu import __version__
from kubegpu.cli.options import name_origin
from kubegpu.errors import InputError, KubegpuError
from kubegpu.guards.bounded import path_text

# name -> (module, attribute, one-line help). The order is the order of `--help`.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "doctor": ("kubegpu.cli.doctor", "doctor", "One report: status, fragmentation, pending pods, defrag preview, audit."),
    "status": ("kubegpu.cli.status", "status", "Per node: pool, GPU model, GPUs total/allocated/free, pods."),
    "why": ("kubegpu.cli.why", "why", "Why a pod is Pending, in kube-scheduler's words, and the smallest fix."),
    "frag": ("kubegpu.cli.frag", "frag", "GPU fragmentation: what fits now, stranded GPUs, the FGD measure."),
    "defrag": ("kubegpu.cli.defrag", "defrag", "Plan (and with --apply, carry out) the fewest safe moves that make room."),
    "simulate": ("kubegpu.cli.simulate", "simulate", "Replay traces: the FGD inflation experiment and more."),
    "audit": ("kubegpu.cli.audit", "audit", "Check the cluster for all ten GPU-cluster pitfalls."),
    "nccl": ("kubegpu.cli.nccl", "nccl", "Read NCCL / PyTorch logs: transport used, failures, the fix."),
    "rules": ("kubegpu.cli.rules", "rules", "Write a PrometheusRule with the GPU-cluster alerts."),
    "storage": ("kubegpu.cli.storage", "storage", "Estimate model load time per storage class."),
    "snapshot": ("kubegpu.cli.snapshot", "snapshot", "Capture everything kubegpu reads as one v1 List file."),
    "models": ("kubegpu.cli.models", "models", "Model weights on node-local disks: plan, pull, agent, rollout gate."),
    "serve": ("kubegpu.cli.serve", "serve", "Serve the GPU dashboard, the JSON API and Prometheus /metrics."),
    "rebalance": ("kubegpu.cli.rebalance", "rebalance", "Make room for waiting GPU pods on its own: reserve, then move."),
    "extender": ("kubegpu.cli.extender", "extender", "Run kubegpu's placement inside kube-scheduler (HTTP extender)."),
    "decisions": ("kubegpu.cli.decisions", "decisions", "Read the extender's decision log: why each pod went where."),
    "shadow": ("kubegpu.cli.shadow", "shadow", "Record every bind of a live cluster next to the policy's choice."),
    "share": ("kubegpu.cli.share", "share", "GPU sharing advice: candidates, time-slicing config, predicted effect."),
}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[cmd_name]
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _prog_name() -> str:
    base = os.path.basename(sys.argv[0]) if sys.argv else "kubegpu"
    return "kubectl gpu" if base.startswith("kubectl-gpu") else "kubegpu"


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="kubegpu")
def cli() -> None:
    """Operate Kubernetes GPU clusters the way an experienced GPU-platform SRE would.

    Every command reads a cluster from one source: --demo (the embedded 40-node demo),
    --snapshot FILE|DIR (kubectl get -o json/yaml dumps, kubegpu snapshot files), or the live
    cluster of your kubeconfig (--kubeconfig, --context). Nothing is changed on a cluster
    unless a command says --apply.

    \b
    Start here:
      kubegpu doctor --demo            the whole picture of the demo cluster
      kubegpu why --all --demo         every Pending GPU pod explained
      kubectl gpu status               the same, as a kubectl plugin, on your cluster
    """


def _usage_line(err: click.ClickException) -> str:
    """A click error as one line (click prints usage, a hint and the error on three)."""
    message = " ".join(err.format_message().split()).removesuffix(".")
    ctx = getattr(err, "ctx", None)
    if isinstance(err, click.UsageError) and ctx is not None:
        return f"error: {message} (see '{ctx.command_path} --help')"
    return f"error: {message}"


def _run(args: list[str]) -> object:
    """What click's `main` does, minus its handlers: it turns Ctrl-C into Abort (after printing an
    empty line) and a closed pipe into exit 1; both are ours to decide."""
    with cli.make_context(_prog_name(), args) as ctx:
        try:
            return cli.invoke(ctx)
        except InputError as err:
            name_origin(err, ctx)
            raise


def main(argv: list[str] | None = None) -> None:
    """Run the CLI: kubegpu errors and usage errors become one line on stderr and exit code 2.

    A closed pipe ends quietly with 141 (as kubectl, killed by SIGPIPE); SIGINT exits 130 and SIGTERM
    143 within about a second, with worker processes ended and no half-written file.
    """
    from kubegpu.cli.interrupts import Terminated, guarded_stdout, on_signals, stdout_closed
    from kubegpu.cli.writer import OutputClosed

    with on_signals() as interrupts, guarded_stdout():
        try:
            rc = _run(sys.argv[1:] if argv is None else list(argv))
        except KubegpuError as err:
            click.echo("error: " + path_text(" ".join(str(err).splitlines())), err=True)  # file names as ls -b
            sys.exit(2)
        except click.exceptions.Abort:
            interrupts.end_workers()
            click.echo("aborted", err=True)
            sys.exit(130)
        except click.exceptions.NoArgsIsHelpError as err:  # bare `kubegpu`: the help, as kubectl does
            click.echo(err.ctx.get_help())
            sys.exit(0)
        except click.ClickException as err:
            click.echo(_usage_line(err), err=True)
            sys.exit(2 if err.exit_code in (1, 2) else err.exit_code)
        except click.exceptions.Exit as err:
            sys.exit(err.exit_code)
        except OutputClosed:
            stdout_closed()
            sys.exit(141)
        except Terminated:
            interrupts.end_workers()
            click.echo("terminated", err=True)
            sys.exit(143)
        except KeyboardInterrupt:
            interrupts.end_workers()
            click.echo("interrupted", err=True)
            sys.exit(130)
        except RecursionError:
            click.echo("error: input nested too deeply to read", err=True)
            sys.exit(2)
        except Exception as err:  # a bug of ours: still one line, with the way to see more
            if os.environ.get("KUBEGPU_DEBUG"):
                raise
            text = " ".join(f"{type(err).__name__}: {err}".split())
            click.echo(f"internal error: {text} (set KUBEGPU_DEBUG=1 for a traceback)", err=True)
            sys.exit(3)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
