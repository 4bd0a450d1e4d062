"""The exception tree that the CLI turns into one-line messages and exit code 2.

Engines raise these; only the CLI layer prints them. Every message names what
was wrong (file, object, field) so the user can fix the input without a traceback.
"""

from __future__ import annotations


class KubegpuError(Exception):
    """Base of every error kubegpu reports to the user as one line."""


class InputError(KubegpuError):
    """Bad input: a file, an object or a field that cannot be read.

    `where` names the file or source, `obj` the Kubernetes object ("Pod/ns/name"),
    `field` the JSON path inside it.
    """

    def __init__(self, message: str, *, where: str | None = None, obj: str | None = None,
                 field: str | None = None) -> None:
        self.message = message
        self.where = where
        self.obj = obj
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [p for p in (self.where, self.obj) if p]
        if self.field:
            parts.append(f"field {self.field}")
        prefix = ": ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message


class QuantityError(InputError):
    """A resource quantity that is not in the Kubernetes quantity grammar."""


class SourceError(KubegpuError):
    """A cluster source that cannot be reached or read (kubeconfig, API server, auth)."""


class UsageError(KubegpuError):
    """A command used in a way that cannot work (conflicting or missing options)."""


class OutputError(InputError):
    """An output that cannot be written: disk full, read-only folder, I/O error, short write.

    Reported like bad input (one line naming the file, exit 2); nothing is left half-written.
    """
