"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

tryAcquireOrRenew (live-scheduling-facts.md section 6): GET the Lease (create it on 404); remember
the record and the *local* time it was first seen; if another holder's lease has not expired by
our own observation (observed + leaseDurationSeconds > now), do not take it; otherwise PUT the new
record with the resourceVersion read, so a concurrent writer gets 409 and this attempt fails.
leaseTransitions goes up by one when the holder changes; acquireTime is kept while we renew.
Release on shutdown: holderIdentity "", leaseDurationSeconds 1.

The loop is single-threaded: the round's sleeps (executor polls, back-offs) go through
`sleeping()`, which renews every retry period and raises `LeadershipLost` once no renewal has
succeeded for renewDeadline, so a round never goes on acting without the Lease.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

from kubegpu.defrag.api import ApiFailure, NoAnswer
from kubegpu.defrag.executor import Stop
from kubegpu.errors import UsageError
from kubegpu.model.timeutil import parse_time
from kubegpu.rebalance.api import LeaseConflict, micro_time


class LeadershipLost(Stop):
    """The Lease could not be renewed within renewDeadline: stop acting (undo our own changes only)."""


@dataclass(frozen=True)
class LeaseConfig:
    namespace: str
    name: str = "kubegpu-rebalance"
    identity: str = ""
    lease_duration_s: float = 15.0     # client-go / kube-scheduler defaults: 15 s / 10 s / 2 s
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0

    def check(self) -> None:
        """client-go's config checks."""
        if not self.identity:
            raise UsageError("leader election needs an identity (--identity, or the pod name)")
        if min(self.lease_duration_s, self.renew_deadline_s, self.retry_period_s) <= 0:
            raise UsageError("lease duration, renew deadline and retry period must be positive")
        if self.lease_duration_s <= self.renew_deadline_s:
            raise UsageError("the lease duration must be greater than the renew deadline")
        if self.renew_deadline_s <= 1.2 * self.retry_period_s:
            raise UsageError("the renew deadline must be greater than 1.2 x the retry period")


def held_by_other(api, namespace: str, name: str, identity: str, now: datetime) -> str | None:
    """The holder of a live Lease other than us (by its renewTime and our wall clock), for `--once`:
    a one-off round must not race a looping leader. None when the Lease is free, ours, expired, absent
    or not readable (a CronJob's role has no Lease access; its own runs never overlap: Forbid)."""
    try:
        lease = api.get_lease(namespace, name)
    except (NoAnswer, ApiFailure):
        return None
    spec = (lease or {}).get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    renewed = parse_time(spec.get("renewTime"))
    if not holder or holder == identity or renewed is None:
        return None
    return holder if renewed + timedelta(seconds=float(spec.get("leaseDurationSeconds") or 0)) > now else None


class LeaderElector:
    def __init__(self, api, config: LeaseConfig, *, clock: Callable[[], float],
                 now: Callable[[], datetime]) -> None:
        config.check()
        self.api = api
        self.cfg = config
        self.clock = clock
        self.now = now
        self._observed: dict | None = None
        self._observed_at: float | None = None
        self._renewed_at: float | None = None

    @property
    def leading(self) -> bool:
        """We hold the Lease and renewed it within renewDeadline."""
        return (self._renewed_at is not None and self._observed is not None
                and self._observed.get("holderIdentity") == self.cfg.identity
                and self.clock() - self._renewed_at < self.cfg.renew_deadline_s)

    def try_acquire_or_renew(self) -> bool:
        cfg = self.cfg
        try:
            lease = self.api.get_lease(cfg.namespace, cfg.name)
            now = micro_time(self.now())
            if lease is None:
                spec = {"holderIdentity": cfg.identity, "leaseDurationSeconds": int(cfg.lease_duration_s),
                        "acquireTime": now, "renewTime": now, "leaseTransitions": 0}
                body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": cfg.name, "namespace": cfg.namespace}, "spec": spec}
                self.api.create_lease(body)
                return self._won(spec)
            spec = dict(lease.get("spec") or {})
            if spec != self._observed:
                self._observed, self._observed_at = copy.deepcopy(spec), self.clock()
            holder = spec.get("holderIdentity") or ""
            duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration_s)
            assert self._observed_at is not None
            if holder and holder != cfg.identity and self._observed_at + duration > self.clock():
                return False
            ours = holder == cfg.identity
            new = {**spec, "holderIdentity": cfg.identity, "leaseDurationSeconds": int(cfg.lease_duration_s),
                   "renewTime": now,
                   "acquireTime": spec.get("acquireTime") if ours and spec.get("acquireTime") else now,
                   "leaseTransitions": int(spec.get("leaseTransitions") or 0) + (0 if ours else 1)}
            body = {**lease, "spec": new}   # metadata keeps the resourceVersion read: 409 if it changed
            self.api.replace_lease(body)
            return self._won(new)
        except (LeaseConflict, NoAnswer, ApiFailure):
            return False

    def _won(self, spec: dict) -> bool:
        self._observed, self._observed_at = copy.deepcopy(spec), self.clock()
        self._renewed_at = self.clock()
        return True

    def hold(self) -> None:
        """Renew now; raise LeadershipLost unless we (still) lead."""
        if not self.try_acquire_or_renew() and not self.leading:
            raise LeadershipLost("lost the Lease: another replica leads now; stopped acting")

    def sleeping(self, sleep: Callable[[float], None]) -> Callable[[float], None]:
        """A sleep that renews every retry period and raises LeadershipLost once the Lease is gone."""
        def nap(seconds: float) -> None:
            left = max(seconds, 0.0)
            while True:
                chunk = min(left, self.cfg.retry_period_s)
                sleep(chunk)
                left -= chunk
                self.try_acquire_or_renew()
                if not self.leading:
                    raise LeadershipLost("could not renew the Lease within the renew deadline; stopped acting")
                if left <= 0:
                    return
        return nap

    def release(self) -> None:
        """Give the Lease up (holder "", duration 1 s) so the next replica takes over at once."""
        try:
            lease = self.api.get_lease(self.cfg.namespace, self.cfg.name)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.cfg.identity:
                return
            now = micro_time(self.now())
            spec = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": now,
                    "acquireTime": now}
            self.api.replace_lease({**lease, "spec": spec})
        except (LeaseConflict, NoAnswer, ApiFailure):
            pass
        self._renewed_at = None
