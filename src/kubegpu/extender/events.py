"""Kubernetes Events that point at decision records (`kubegpu extender --events`, live source only).

The record is the log, the event is the pointer: an events.k8s.io/v1 Event on the pod, reason
`KubegpuDecision`, reportingController `kubegpu.io/extender`, whose note (at most 1,024 bytes,
cut as upstream's recorder does: `text[:1020] + " ..."`) names the ledger record id and one
line of why. Events are posted off the request path: the verb only offers the record to a
bounded queue (full: the event is dropped and counted); one thread drains it, rate-limited by a
token bucket, and a failed POST is counted, never retried into the scheduling path.

Which records get one: a prioritize answer (Normal when scored, Warning when no node fits), a
filter that passed no node or failed (Warning), a preempt that dropped candidates (Normal). A
filter that passed nodes gets none: the prioritize record of the same attempt follows.
Facts: the reference live-scheduling-facts.md, section 5 (events.k8s.io/v1 create validation,
metadata.name `<pod>.<unix nanos hex>`, reportingInstance `<controller>-<hostname>`).
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from lightkube.resources.events_v1 import Event

from kubegpu.extender.ledger import Decision, summary
from kubegpu.sources.kubeconfig import lightkube_client

REASON = "KubegpuDecision"
REPORTING_CONTROLLER = "kubegpu.io/extender"
NOTE_LIMIT = 1024            # events.k8s.io/v1 NoteLengthLimit
FIELD_LIMIT = 128            # reason, action, reportingInstance
ACTIONS = {"extender-filter": "Filter", "extender-prioritize": "Prioritize", "extender-preempt": "Preempt"}
WARNING_OUTCOMES = ("rejected", "error", "no-fit")
EVENT_OUTCOMES = {"extender-prioritize": ("scored", "no-fit"), "extender-filter": ("rejected", "error"),
                  "extender-preempt": ("dropped-some",)}

Post = Callable[[str, dict], None]     # (namespace, events.k8s.io/v1 Event body) -> raises on failure


def wants_event(d: Decision) -> bool:
    return d.outcome in EVENT_OUTCOMES.get(d.mode, ())


def cut_note(text: str) -> str:
    """At most NOTE_LIMIT bytes, cut as client-go's recorder cuts messages (`text[:1020] + " ..."`)."""
    raw = text.encode()
    if len(raw) <= NOTE_LIMIT:
        return text
    return raw[: NOTE_LIMIT - 4].decode(errors="ignore") + " ..."


def note_of(d: Decision, ledger_path: str | None) -> str:
    where = f" --ledger {ledger_path}" if ledger_path else " (in-memory ring: /api/decisions)"
    why = summary(d)
    return cut_note(f"kubegpu {ACTIONS[d.mode].lower()}: {d.outcome}; record {d.id}"
                    f"{': ' + why if why else ''}. Full record: kubegpu decisions "
                    f"{d.pod.namespace}/{d.pod.name}{where}")


def micro_time(seconds: float) -> str:
    """MicroTime: RFC 3339 with 6 fractional digits, UTC."""
    whole = int(seconds)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((seconds - whole) * 1e6):06d}Z"


def event_body(d: Decision, *, instance: str, ledger_path: str | None, now: float) -> dict:
    """The events.k8s.io/v1 Event for a record (passes the API server's strict create validation)."""
    namespace = d.pod.namespace or "default"
    regarding = {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": d.pod.name}
    if d.pod.uid:
        regarding["uid"] = d.pod.uid
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"{d.pod.name}.{time.time_ns():x}", "namespace": namespace},
            "eventTime": micro_time(now), "reportingController": REPORTING_CONTROLLER,
            "reportingInstance": instance[:FIELD_LIMIT], "action": ACTIONS[d.mode], "reason": REASON,
            "type": "Warning" if d.outcome in WARNING_OUTCOMES else "Normal",
            "regarding": regarding, "note": note_of(d, ledger_path)}


@dataclass
class EventCounts:
    offered: int = 0
    posted: int = 0
    dropped: int = 0      # the queue was full
    failed: int = 0       # the POST failed


class EventPoster:
    """A bounded queue of records and one thread posting their events at most `qps` (burst `burst`)."""

    def __init__(self, post: Post, *, qps: float = 5.0, burst: int = 10, queue_size: int = 1000,
                 ledger_path: str | None = None, instance: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.post = post
        self.qps = qps
        self.burst = burst
        self.ledger_path = ledger_path
        self.instance = instance or f"{REPORTING_CONTROLLER}-{socket.gethostname()}"
        self.clock = clock
        self.counts = EventCounts()
        self._queue: queue.Queue[Decision | None] = queue.Queue(maxsize=queue_size)
        self._tokens = float(burst)
        self._refilled = clock()
        self._thread = threading.Thread(target=self._drain, name="kubegpu-events", daemon=True)
        self._thread.start()

    def offer(self, d: Decision) -> None:
        """Called on the request path (a ledger listener): never blocks, never raises."""
        if not wants_event(d):
            return
        self.counts.offered += 1
        try:
            self._queue.put_nowait(d)
        except queue.Full:
            self.counts.dropped += 1

    def _wait_for_token(self) -> None:
        while True:
            now = self.clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._refilled) * self.qps)
            self._refilled = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return
            time.sleep((1.0 - self._tokens) / self.qps)

    def _drain(self) -> None:
        while True:
            d = self._queue.get()
            if d is None:
                return
            self._wait_for_token()
            body = event_body(d, instance=self.instance, ledger_path=self.ledger_path, now=time.time())
            try:
                self.post(body["metadata"]["namespace"], body)
                self.counts.posted += 1
            except Exception:  # any failure of the API call: counted on /metrics, scheduling goes on
                self.counts.failed += 1

    def close(self, timeout: float = 5.0) -> None:
        """Post what is queued (within `timeout`), then stop the thread."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)


def lightkube_post(kubeconfig: str | None, context: str | None) -> Post:
    """POST an events.k8s.io/v1 Event with the client kubectl's config gives (kubegpu's auth handling)."""
    client = lightkube_client(kubeconfig, context)

    def post(namespace: str, body: dict) -> None:
        client.create(Event.from_dict(body), namespace=namespace)

    return post
