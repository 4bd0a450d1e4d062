"""`kubegpu rules`: write the PrometheusRule with the GPU-cluster alerts."""

from __future__ import annotations

import click

from kubegpu.cli.options import file_option, format_for_file, output_option
from kubegpu.errors import UsageError


def _labels(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in values:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"--label {item!r} is not KEY=VALUE")
        out[key] = value
    return out


def _duration(value: str, flag: str) -> str:
    """The value as written, once Prometheus would read it (model.ParseDuration) as more than 0."""
    from kubegpu.model.timeutil import prometheus_duration_ms

    try:
        ms = prometheus_duration_ms(value)
    except ValueError as err:
        raise UsageError(f"{flag} {value!r} is not a Prometheus duration ({err}): integers with units "
                         "y w d h m s ms, largest first, e.g. 10m or 1h30m") from None
    if ms <= 0:
        raise UsageError(f"{flag} {value!r} is not a duration like 10m or 1h (it must be more than 0)")
    return value


@click.command()
@output_option(default=None, standard=("yaml", "json"), legacy_file=True)
@file_option()
@click.option("--iowait-threshold", type=click.FloatRange(0, 100, min_open=True), default=10.0, show_default=True,
              help="Node IO wait, in percent of CPU time, that raises NodeHighIOWait.")
@click.option("--for", "for_", default="10m", show_default=True, help="How long iowait must stay high.")
@click.option("--idle-util", type=click.FloatRange(0, 100), default=5.0, show_default=True,
              help="GPU utilisation (%) under which an allocated GPU counts as idle.")
@click.option("--idle-for", default="30m", show_default=True, help="How long an allocated GPU must stay idle.")
@click.option("--name", default="kubegpu-gpu-cluster", show_default=True, help="metadata.name of the rule.")
@click.option("--namespace", default="monitoring", show_default=True, help="metadata.namespace of the rule.")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE",
              help="Label the rule (e.g. release=kube-prometheus-stack so Prometheus selects it). Repeatable.")
@click.option("--no-kubegpu-metrics", is_flag=True, help="Leave out the alerts on kubegpu's own exporter metrics.")
def rules(output, file, iowait_threshold, for_, idle_util, idle_for, name, namespace, labels, no_kubegpu_metrics):
    """Write a PrometheusRule (monitoring.coreos.com/v1) with the alerts a GPU cluster needs.

    NodeHighIOWait (iowait > 10% for 10m), GPUAllocatedButIdle (dcgm-exporter), GPUIdleWhileIOWaitHigh
    (both on one node), and fragmentation / stranded GPUs from `kubegpu serve` metrics.

    \b
    Examples:
      kubegpu rules | kubectl apply -f -
      kubegpu rules --label release=kube-prometheus-stack --file gpu-rules.yaml
      kubegpu rules -o json
    """
    from kubegpu.audit.rules import RuleOptions, prometheus_rule_yaml

    opts = RuleOptions(name=name, namespace=namespace, labels=_labels(labels), iowait_threshold=iowait_threshold,
                       iowait_for=_duration(for_, "--for"), idle_util=idle_util,
                       idle_for=_duration(idle_for, "--idle-for"), kubegpu_metrics=not no_kubegpu_metrics)
    from kubegpu.cli.render import emit, emit_text

    text = prometheus_rule_yaml(opts)
    if format_for_file(output, file, default="yaml") == "json":
        import yaml

        emit(yaml.safe_load(text), "json", file=file)
    else:
        emit_text(text, file=file)
    if file and file != "-":
        click.echo(f"wrote {file}", err=True)
