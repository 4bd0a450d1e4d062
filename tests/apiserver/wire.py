"""Requests, replies and keys of the test API server, and the v1 Status every error carries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

ANONYMOUS = "system:anonymous"


class ObjectKey(NamedTuple):
    api_version: str  # "v1", "apps/v1"
    plural: str
    namespace: str  # "" for cluster-scoped objects
    name: str


@dataclass
class ApiRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    user: str = ANONYMOUS


@dataclass
class Reply:
    status: int
    body: Any  # JSON-able data, or bytes sent as they are
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict[str, str]
    user: str
    status: int


def status_reply(code: int, reason: str, message: str, *, details: dict | None = None,
                 metadata: dict | None = None) -> Reply:
    """An error answer as the API server sends it: a v1 Status object."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": metadata or {},
                            "status": "Failure", "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return Reply(code, body)
