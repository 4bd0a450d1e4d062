"""The namespace scope of a command run (-n/-A), with kubectl's one-line note for an empty one."""

from __future__ import annotations

import click

from kubegpu.model.cluster import ClusterState
from kubegpu.model.namespaces import NamespaceScope, namespace_note


def namespace_scope(source, state: ClusterState) -> NamespaceScope:
    """The scope of `source` (SourceOptions); an unknown or pod-less namespace is noted on stderr."""
    scope = NamespaceScope(None if source.all_namespaces else source.namespace)
    note = namespace_note(state, scope)
    if note:
        click.echo(note, err=True)
    return scope
