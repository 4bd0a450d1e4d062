"""Flags of a container's command line, read as Go's flag package reads them.

One reader for the cluster-autoscaler (and any other) Deployment args that the audit checks and the
simulator's initial state both look at.
"""

from __future__ import annotations

from typing import Iterable


def command_flags(args: list[str], *, bool_flags: Iterable[str] = ()) -> dict[str, str]:
    """`--name=value`, `--name value` and bare `--name` (-> "true") flags; the last one wins, as in Go.

    A flag named in `bool_flags` never takes the next argument as its value (`--flag false` is not
    how Go's booleans are written). `--nodes` (cluster-autoscaler's MIN:MAX:GROUP, repeatable) keeps
    every value, space-separated.
    """
    booleans = frozenset(bool_flags)
    flags: dict[str, str] = {}
    i = 0
    while i < len(args):
        token = args[i]
        if token.startswith("--"):
            name, eq, value = token[2:].partition("=")
            if not eq:
                if name not in booleans and i + 1 < len(args) and not args[i + 1].startswith("-"):
                    value = args[i + 1]
                    i += 1
                else:
                    value = "true"
            if name == "nodes":
                flags["nodes"] = (flags.get("nodes", "") + " " + value).strip()
            else:
                flags[name] = value
        i += 1
    return flags
