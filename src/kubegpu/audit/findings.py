"""What a check hands back: a finding about one object, with the evidence and the fix.

Checks return `Hit`s (object, message, evidence, patch); the engine stamps each with the check's
catalog entry (ID, pitfall, title, severity, remediation) to make a `Finding`. Keeping the
catalog data out of the check functions keeps IDs, severities and remediations in one table.
"""

from __future__ import annotations

from enum import IntEnum

import msgspec

CLUSTER_OBJECT = "Cluster/cluster"  # findings about the cluster as a whole name this object


class Severity(IntEnum):
    """Ordered levels: a finding at or above `--fail-on` fails the run."""

    INFO = 1
    WARN = 2
    ERROR = 3

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (choose from info, warn, error)") from None

    @property
    def label(self) -> str:
        return self.name.lower()


class Patch(msgspec.Struct, frozen=True, kw_only=True):
    """A concrete fix: a manifest to apply, a merge patch for `target`, or a command to run."""

    kind: str                # "manifest" | "merge-patch" | "command"
    content: str             # YAML text (manifest, patch) or a shell command line
    target: str | None = None  # "Kind/ns/name" the merge patch applies to


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    """One problem a check found, before the engine adds the catalog data."""

    object: str
    message: str
    evidence: tuple[str, ...] = ()
    patch: Patch | None = None
    remediation: str | None = None  # object-specific remediation, replaces the catalog's


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """A finding as written in the audit JSON (DESIGN section 4, extended); every key always present.

    `scope` is "namespace" for a finding about a namespaced object, "cluster" for a cluster-scoped
    one (a Node, a StorageClass, the cluster as a whole): `-n NS` keeps the latter."""

    id: str
    pitfall: int
    severity: str
    object: str
    message: str
    remediation: str
    title: str = ""
    evidence: tuple[str, ...] = ()
    patch: Patch | None = None
    scope: str = "namespace"

    @property
    def level(self) -> Severity:
        return Severity.parse(self.severity)

    @property
    def headline(self) -> str:
        """'[ID] message', the form tests and the table print."""
        return f"[{self.id}] {self.message}"
