"""MicroTime on the wire: 6 fractional digits always, also when the microseconds are 0.

The API server decodes MicroTime with time.Parse(RFC3339Micro, "2006-01-02T15:04:05.000000Z07:00")
(apimachinery meta/v1/micro_time.go): "2026-12-01T12:00:00Z" is refused with a 400. The hook below
refuses exactly that, as the real decoder does, and keeps the bytes each Lease/Event write sent."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

from apiserver.wire import status_reply
from liveworld import FakeTime

from kubegpu.rebalance.api import micro_time, to_resource
from kubegpu.rebalance.leader import LeaderElector, LeaseConfig

RFC3339_MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$")


def micro_time_decoder(sent: list[bytes]):
    def hook(request):
        if request.method not in ("POST", "PUT") or not re.search(r"/(leases|events)(/|$)", request.path):
            return None
        sent.append(request.body)
        body = json.loads(request.body)
        fields = {**(body.get("spec") or {}), **body}
        for name in ("acquireTime", "renewTime", "eventTime"):
            value = fields.get(name)
            if value is not None and not RFC3339_MICRO.match(value):
                return status_reply(400, "BadRequest", f'parsing time "{value}" as "2006-01-02T15:04:05.000000Z07:00"')
        return None
    return hook


def test_lease_writes_keep_6_fractional_digits_at_a_whole_second(live):
    sent: list[bytes] = []
    live.server.faults.append(micro_time_decoder(sent))
    time = FakeTime()                                        # 2026-12-01T12:00:00.000000Z: microseconds 0
    elector = LeaderElector(live.api(), LeaseConfig(namespace="kubegpu", identity="replica-a"),
                            clock=time.clock, now=time.now)
    assert elector.try_acquire_or_renew()                    # create
    time.sleep(2.0)
    assert elector.try_acquire_or_renew()                    # replace: acquireTime comes back from the read
    elector.release()
    assert len(sent) == 3
    assert b'"acquireTime":"2026-12-01T12:00:00.000000Z"' in sent[0]
    assert b'"renewTime":"2026-12-01T12:00:00.000000Z"' in sent[0]
    assert b'"acquireTime":"2026-12-01T12:00:00.000000Z"' in sent[1]
    assert b'"renewTime":"2026-12-01T12:00:02.000000Z"' in sent[1]
    assert b'"renewTime":"2026-12-01T12:00:02.000000Z"' in sent[2]
    assert live.scheduler.lease("kubegpu", "kubegpu-rebalance")["spec"]["holderIdentity"] == ""


def test_event_time_keeps_6_fractional_digits():
    import msgspec

    body = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "p.1", "namespace": "ml"},
            "eventTime": "2026-12-01T12:00:00.000000Z", "reportingController": "kubegpu.io/rebalance",
            "reportingInstance": "a", "action": "Evicting", "reason": "Rebalancing", "type": "Normal"}
    # what lightkube's client sends: msgspec.json.encode of the object
    assert b'"eventTime":"2026-12-01T12:00:00.000000Z"' in msgspec.json.encode(to_resource(body))


def test_micro_time_is_utc_with_6_digits():
    east = timezone(timedelta(hours=2))
    assert micro_time(datetime(2026, 12, 1, 14, 0, tzinfo=east)) == "2026-12-01T12:00:00.000000Z"
    assert micro_time(datetime(2026, 12, 1, 12, 0, 0, 123, tzinfo=timezone.utc)) == "2026-12-01T12:00:00.000123Z"
