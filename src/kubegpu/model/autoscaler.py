"""The cluster's own cluster-autoscaler, read once: which Deployment it is, its flags with upstream's
defaults, and the node groups it names — what the audit checks and the simulator's initial state read.

Flags are read as Go's flag package reads them (`model.cmdline`): `--flag=v` and `--flag v` alike, a
boolean flag never takes the next argument (`--skip-nodes-with-local-storage false` sets it true and
leaves "false" as a positional argument), the last occurrence wins, `--nodes` repeats.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubegpu.errors import InputError
from kubegpu.model.cmdline import command_flags
from kubegpu.model.kinds import Workload
from kubegpu.model.integers import int_or_none

CA_NAME = "cluster-autoscaler"

# upstream cluster-autoscaler FAQ flag table / pkg/config/flags defaults: name -> (kind, default as written)
FLAGS: dict[str, tuple[str, str]] = {
    "scan-interval": ("duration", "10s"),
    "max-node-provision-time": ("duration", "15m"),
    "scale-down-enabled": ("bool", "true"),
    "scale-down-delay-after-add": ("duration", "10m"),
    "scale-down-delay-after-delete": ("duration", "0s"),
    "scale-down-delay-after-failure": ("duration", "3m"),
    "scale-down-delay-type-local": ("bool", "false"),
    "scale-down-unneeded-time": ("duration", "10m"),
    "scale-down-unready-time": ("duration", "20m"),
    "scale-down-unready-enabled": ("bool", "true"),
    "scale-down-utilization-threshold": ("float", "0.5"),
    "scale-down-gpu-utilization-threshold": ("float", "0.5"),
    "scale-down-non-empty-candidates-count": ("int", "30"),
    "new-pod-scale-up-delay": ("duration", "0s"),
    "expander": ("str", "least-waste"),
    "max-nodes-total": ("int", "0"),
    "max-scale-down-parallelism": ("int", "10"),
    "max-drain-parallelism": ("int", "1"),
    "max-nodes-per-scaleup": ("int", "1000"),
    "node-delete-delay-after-taint": ("duration", "5s"),
    "max-graceful-termination-sec": ("int", "600"),
    "initial-node-group-backoff-duration": ("duration", "5m"),
    "max-node-group-backoff-duration": ("duration", "30m"),
    "node-group-backoff-reset-timeout": ("duration", "3h"),
    "expendable-pods-priority-cutoff": ("int", "-10"),
    "skip-nodes-with-local-storage": ("bool", "true"),
    "skip-nodes-with-system-pods": ("bool", "true"),
    "enforce-node-group-min-size": ("bool", "false"),
}
BOOL_FLAGS = frozenset(name for name, (kind, _) in FLAGS.items() if kind == "bool")
# Go strconv.ParseBool
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def go_bool(text: str) -> bool | None:
    """A boolean as Go's strconv.ParseBool reads it (None: not a boolean)."""
    return True if text in _GO_TRUE else False if text in _GO_FALSE else None


@dataclass(frozen=True)
class NodeGroupBounds:
    """One `--nodes=MIN:MAX:NAME` of the autoscaler."""

    name: str
    min: int
    max: int


@dataclass(frozen=True)
class ClusterAutoscaler:
    workload: Workload
    flags: dict[str, str]                      # every flag as written (unknown ones too)

    def node_groups(self, *, strict: bool = True) -> tuple[NodeGroupBounds, ...]:
        """The `--nodes=MIN:MAX:NAME` groups; a malformed one is an InputError naming the Deployment
        (`strict=False`: left out, for a reader that only reports on the cluster)."""
        out = []
        for item in self.flags.get("nodes", "").split():
            group = _node_group(item)
            if group is None and strict:
                raise InputError(f"--nodes={item!r} is not MIN:MAX:NAME (0 <= MIN <= MAX)", obj=self.workload.ref,
                                 field="spec.template.spec.containers[].args")
            if group is not None:
                out.append(group)
        return tuple(out)

    def value(self, name: str) -> tuple[str, bool]:
        """(the flag's text, whether that is upstream's default)."""
        if name in self.flags:
            return self.flags[name], False
        return FLAGS[name][1], True

    def enabled(self, name: str) -> bool:
        """A boolean flag's value (an unreadable value counts as the default)."""
        text, _ = self.value(name)
        parsed = go_bool(text)
        return parsed if parsed is not None else go_bool(FLAGS[name][1]) is True

    @property
    def modelled_flags(self) -> dict[str, str]:
        """The flags of FLAGS that the cluster sets explicitly."""
        return {name: value for name, value in self.flags.items() if name in FLAGS}


def is_cluster_autoscaler(image: str | None, line: list[str]) -> bool:
    """The image, or the program (one of the first two tokens: `./cluster-autoscaler`, `/bin/sh -c ...`)."""
    return CA_NAME in (image or "") or any(CA_NAME in token.rsplit("/", 1)[-1] for token in line[:2])


def _node_group(item: str) -> NodeGroupBounds | None:
    lo, _, rest = item.partition(":")
    hi, _, name = rest.partition(":")
    low, high = int_or_none(lo, lo=0), int_or_none(hi, lo=0)  # ASCII digits within int64, never a huge int()
    if low is None or high is None or not name or low > high:
        return None
    return NodeGroupBounds(name=name, min=low, max=high)


def find_cluster_autoscalers(state) -> list[ClusterAutoscaler]:
    """Every cluster-autoscaler Deployment of the state (its first matching container), in state order."""
    out = []
    for dep in state.of_kind("Deployment"):
        for c in dep.spec.template.spec.containers:
            line = [*c.command, *c.args]
            if is_cluster_autoscaler(c.image, line):
                out.append(ClusterAutoscaler(dep, command_flags(line, bool_flags=BOOL_FLAGS)))
                break
    return out
