"""Which cluster a defrag journal belongs to, so `--resume` never acts on another one.

A journal records the identity of the cluster it was started on: the API server URL, the SHA-256
of the CA bundle the kubeconfig trusts, the uid of the `kube-system` namespace (created once per
cluster and never renamed, so it tells apart two clusters behind the same URL or one cluster
reached through two URLs), and the kubeconfig context name (for messages only).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import asdict, dataclass

from kubegpu.errors import InputError
from kubegpu.guards.bounded import read_bounded


@dataclass(frozen=True)
class ClusterIdentity:
    server: str
    ca_sha256: str | None = None
    cluster_uid: str | None = None     # metadata.uid of namespace kube-system
    context: str | None = None

    def to_builtins(self) -> dict:
        return asdict(self)

    @classmethod
    def from_builtins(cls, data: dict) -> "ClusterIdentity":
        return cls(**{k: data.get(k) for k in ("server", "ca_sha256", "cluster_uid", "context")})

    def describe(self) -> str:
        who = f"context {self.context}, " if self.context else ""
        uid = f", kube-system uid {self.cluster_uid}" if self.cluster_uid else ""
        return f"{who}{self.server}{uid}"


def ca_fingerprint(ca_data: str | None, ca_file: str | None) -> str | None:
    """SHA-256 of the CA bundle (base64 `certificate-authority-data`, or the file it names)."""
    raw: bytes | None = None
    if ca_data:
        try:
            raw = base64.b64decode(ca_data)
        except ValueError:
            raw = ca_data.encode()
    elif ca_file:
        try:  # bounded: a CA bundle is small, and a FIFO must not hang the run
            raw = read_bounded(ca_file, max_bytes=16 << 20)
        except InputError:
            return None
    return hashlib.sha256(raw).hexdigest() if raw else None


def mismatch(recorded: ClusterIdentity, live: ClusterIdentity) -> str | None:
    """Why `live` is not the cluster `recorded` (None: the same cluster).

    The kube-system uid decides when both sides know it; otherwise the server URL and CA must agree.
    """
    if recorded.cluster_uid and live.cluster_uid:
        if recorded.cluster_uid == live.cluster_uid:
            return None
        return f"kube-system uid {live.cluster_uid} is not the journal's {recorded.cluster_uid}"
    if recorded.server.rstrip("/") != live.server.rstrip("/"):
        return f"server {live.server} is not the journal's {recorded.server}"
    if recorded.ca_sha256 and live.ca_sha256 and recorded.ca_sha256 != live.ca_sha256:
        return "the server's CA is not the one the journal recorded"
    if recorded.cluster_uid and not live.cluster_uid:
        return "cannot read namespace kube-system to confirm the cluster (the journal recorded its uid)"
    return None
