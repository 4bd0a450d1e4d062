"""The rebalancer's writes beyond defrag's (cordon, evict): placeholder pods, the Lease, Events.

The same lightkube client and the same error sorting as `defrag.api.LightkubeApi` (429 / no
answer / anything else), so the executor and the rebalancer stop on the same answers.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Protocol

from lightkube import codecs
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Pod

from kubegpu.defrag.api import ApiFailure, ClusterApi, LightkubeApi
from kubegpu.sources.kubeconfig import Timeouts, lightkube_client, resolve_cluster
from kubegpu.defrag.identity import ca_fingerprint


class LeaseConflict(Exception):
    """409: someone else wrote the Lease since we read it (or created it first)."""


class RebalanceApi(ClusterApi, Protocol):
    def create_pod(self, body: dict) -> dict: ...
    def read_pod(self, namespace: str, name: str) -> dict | None: ...
    def delete_pod(self, namespace: str, name: str) -> bool: ...
    def pods_labelled(self, namespace: str, selector: dict[str, str]) -> list[dict]: ...
    def get_lease(self, namespace: str, name: str) -> dict | None: ...
    def create_lease(self, body: dict) -> dict: ...
    def replace_lease(self, body: dict) -> dict: ...
    def create_event(self, body: dict) -> None: ...


class LightkubeRebalanceApi(LightkubeApi):
    """RebalanceApi over a lightkube Client (field manager `kubegpu-rebalance`)."""

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None, context: str | None = None,
                        timeouts: Timeouts | None = None) -> "LightkubeRebalanceApi":
        cluster = resolve_cluster(kubeconfig, context)
        c = cluster.single.cluster
        return cls(lightkube_client(kubeconfig, context, timeouts), field_manager="kubegpu-rebalance",
                   server=c.server, ca_sha256=ca_fingerprint(c.certificate_auth_data, c.certificate_auth),
                   context=cluster.context)

    def create_pod(self, body: dict) -> dict:
        obj = codecs.from_dict(body)
        return self._call(self.client.create, obj, field_manager=self.field_manager).to_dict()

    def _found(self, fn, *args, **kwargs):
        """fn's answer, or None on 404."""
        try:
            return self._call(fn, *args, **kwargs)
        except ApiFailure as err:
            if err.code == 404:
                return None
            raise

    def read_pod(self, namespace: str, name: str) -> dict | None:
        pod = self._found(self.client.get, Pod, name=name, namespace=namespace)
        return None if pod is None else pod.to_dict()

    def delete_pod(self, namespace: str, name: str) -> bool:
        """Delete at once (grace 0: a placeholder holds nothing); False when it was gone already."""
        try:
            self._call(self.client.delete, Pod, name, namespace=namespace, grace_period=0)
            return True
        except ApiFailure as err:
            if err.code == 404:
                return False
            raise

    def pods_labelled(self, namespace: str, selector: dict[str, str]) -> list[dict]:
        return self._call(lambda: [p.to_dict() for p in self.client.list(Pod, namespace=namespace,
                                                                          labels=selector)])

    def get_lease(self, namespace: str, name: str) -> dict | None:
        lease = self._found(self.client.get, Lease, name=name, namespace=namespace)
        return None if lease is None else lease.to_dict()

    def create_lease(self, body: dict) -> dict:
        return self._lease_write(self.client.create, body)

    def replace_lease(self, body: dict) -> dict:
        return self._lease_write(self.client.replace, body)

    def _lease_write(self, fn, body: dict) -> dict:
        try:
            return self._call(fn, to_resource(body), field_manager=self.field_manager).to_dict()
        except ApiFailure as err:
            if err.code == 409:
                raise LeaseConflict(str(err)) from None
            raise

    def create_event(self, body: dict) -> None:
        self._call(self.client.create, to_resource(body), field_manager=self.field_manager)


def micro_time(when: datetime) -> str:
    """MicroTime: RFC 3339 in UTC with 6 fractional digits (live-scheduling-facts.md section 6)."""
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# kind -> (the nested object holding MicroTime fields, or None for the top level; the field names)
MICRO_TIME_FIELDS = {"Lease": ("spec", ("acquireTime", "renewTime")), "Event": (None, ("eventTime",))}


def to_resource(body: dict):
    """lightkube's object for `body`, every MicroTime written with 6 fractional digits on the wire.

    lightkube decodes MicroTime into a datetime and msgspec encodes one whose microseconds are 0
    without a fraction ("...:05Z"); the API server decodes MicroTime with
    time.Parse(RFC3339Micro, "2006-01-02T15:04:05.000000Z07:00") (apimachinery
    meta/v1/micro_time.go UnmarshalJSON), which refuses that: 400 on one renewal in a million."""
    obj = codecs.from_dict(body)
    where, names = MICRO_TIME_FIELDS.get(body.get("kind") or "", (None, ()))
    target = getattr(obj, where, None) if where else obj
    for name in names:
        value = getattr(target, name, None) if target is not None else None
        if isinstance(value, datetime):
            setattr(target, name, micro_time(value))   # a str on a msgspec Struct is encoded as it is
    return obj


__all__ = ["LeaseConflict", "LightkubeRebalanceApi", "RebalanceApi", "micro_time"]
