"""One extender call from request bytes to reply bytes, with its decision record and metrics.

The HTTP edge (app.py) hands each verb the request body; this module decodes the wire types,
asks filter / prioritize / preempt, encodes the reply and writes the ledger record. Input that
cannot be read becomes a `BadRequest` (the edge answers 400) or, for filter, an extender `Error`
string, which kube-scheduler reports as a scheduling error for that attempt; nothing here
raises past the edge.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import msgspec

from kubegpu.errors import InputError
from kubegpu.extender.filter import decide_filter, histogram_message
from kubegpu.extender.ledger import (Decision, FilterSummary, GangRef, GpuRequest, Ledger, PodRef, PreemptSummary,
                                     Score, Timings)
from kubegpu.extender.metrics import ExtenderMetrics
from kubegpu.extender.podfacts import PodFacts, decode_pod
from kubegpu.extender.preempt import decide_preempt
from kubegpu.extender.prioritize import decide_prioritize, encode_priorities
from kubegpu.extender.state import ExtenderModel, ExtenderStore, node_index_array
from kubegpu.extender.wire import (ARGS_DECODER, ENCODER, PREEMPT_DECODER, ExtenderFilterResult,
                                   ExtenderPreemptionResult, NodeList, decode_node_names, gather_filter_result,
                                   has_node_names, request_node_names)

MAX_NODE_NAMES = 100_000     # far beyond any cluster kube-scheduler runs; more is a broken caller


class BadRequest(Exception):
    """A request the extender cannot read: the edge answers 400 with this message."""


def _decode(decoder: msgspec.json.Decoder, body: bytes, what: str):
    """A wire struct from the body, or a BadRequest saying what is wrong where."""
    try:
        return decoder.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError) as err:
        raise BadRequest(f"not an {what} object: {err}") from None
    except RecursionError:
        raise BadRequest(f"{what} nested too deeply to read") from None


def now_text() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def pod_ref(facts: PodFacts, model: ExtenderModel | None) -> PodRef:
    pod = facts.pod
    owner = pod.controller
    return PodRef(namespace=pod.namespace or "default", name=pod.name, uid=pod.metadata.uid or "",
                  owner=f"{owner.kind}/{owner.name}" if owner else None,
                  priority=model.cluster.priority_of(pod) if model else (pod.spec.priority or 0),
                  scheduler_name=pod.spec.scheduler_name or "default-scheduler")


def gpu_request(facts: PodFacts) -> GpuRequest:
    d = facts.demand(None)
    return GpuRequest(cpu_milli=int(facts.requests.get("cpu", 0)), memory_bytes=int(facts.requests.get("memory", 0)),
                      num_gpu=d.num_gpu, gpu_milli=d.gpu_milli,
                      gpu_models=sorted(d.models) if d.models else None, resources=dict(facts.requests))


def _unnamed_pod(raw) -> PodRef:
    """Best effort naming of a pod that could not be decoded (for the error record)."""
    try:
        meta = msgspec.json.decode(raw or b"{}").get("metadata") or {}
        return PodRef(namespace=str(meta.get("namespace") or ""), name=str(meta.get("name") or ""),
                      uid=str(meta.get("uid") or ""))
    except Exception:  # anything unreadable: the record still says there was an error
        return PodRef(namespace="", name="")


class Extender:
    """The three verbs over one store, one ledger and one metrics registry."""

    def __init__(self, store: ExtenderStore, ledger: Ledger, metrics: ExtenderMetrics, *,
                 max_work_lost: float, assume: bool = True) -> None:
        self.store = store
        self.ledger = ledger
        self.metrics = metrics
        self.max_work_lost = max_work_lost
        self.assume = assume

    # ---- helpers --------------------------------------------------------------------------
    def _model(self) -> ExtenderModel:
        model = self.store.model
        if model is None:
            raise InputError("no cluster data yet: " + (self.store.health.last_error or "loading"))
        return model

    def _args(self, body: bytes):
        args = _decode(ARGS_DECODER, body, "ExtenderArgs")
        try:
            model = self.store.model
            if model is not None and has_node_names(args):
                names = model.node_names(bytes(memoryview(args.NodeNames)), decode_node_names)
            else:
                names = request_node_names(args)
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            raise BadRequest(f"NodeNames or Nodes.items: not node names or v1 Nodes: {err}") from None
        if len(names) > MAX_NODE_NAMES:
            raise BadRequest(f"{len(names)} nodes in one request (at most {MAX_NODE_NAMES})")
        return args, names

    def _record(self, mode: str, t0: float, outcome: str, *, facts: PodFacts | None, model, raw_pod=None,
                **fields) -> Decision:
        total = (time.perf_counter() - t0) * 1e3
        timings = fields.pop("timings", None) or Timings(total_ms=round(total, 3))
        timings.total_ms = round(total, 3)
        d = Decision(id=self.ledger.next_id(), time=now_text(), mode=mode,
                     pod=pod_ref(facts, model) if facts else _unnamed_pod(raw_pod), outcome=outcome,
                     generation=model.generation if model else 0,
                     snapshot_age_s=round(self.store.age() or 0.0, 3) if model else None,
                     policy=self.store.policy_name, timings=timings,
                     request=gpu_request(facts) if facts else None, **fields)
        self.ledger.record(d)
        self.metrics.observe(mode.removeprefix("extender-"), outcome, total / 1e3)
        return d

    # ---- verbs ----------------------------------------------------------------------------
    def filter(self, body: bytes) -> bytes:
        """ExtenderArgs -> ExtenderFilterResult (errors go into `Error`, as kube-scheduler expects)."""
        with self.store.lock:   # one generation, its overlay and its policy for the whole call
            return self._filter(body)

    def _filter(self, body: bytes) -> bytes:
        t0 = time.perf_counter()
        args, names = self._args(body)
        facts = model = None
        try:
            model = self._model()
            facts = model.facts(decode_pod(args.Pod))
            self.store.expire()
            answer = decide_filter(self.store, model, facts, names)
            if names and answer.unknown == len(names):
                raise InputError(f"none of the {len(names)} nodes is in the extender's cache "
                                 f"(generation {model.generation}): a different cluster, or stale data")
        except InputError as err:
            self._record("extender-filter", t0, "error", facts=facts, model=model, raw_pod=args.Pod, error=str(err),
                         filter=FilterSummary(nodes_in=len(names), passed=0))
            return ENCODER.encode(ExtenderFilterResult(Error=f"kubegpu: {err}"))
        passed = answer.passed.tolist()
        if not has_node_names(args) and args.Nodes is not None:
            items = args.Nodes.items or []
            out = ENCODER.encode(ExtenderFilterResult(Nodes=NodeList(items=[items[j] for j in passed]),
                                                      FailedNodes=answer.failed,
                                                      FailedAndUnresolvableNodes=answer.unresolvable))
        elif answer.unknown:
            out = ENCODER.encode(ExtenderFilterResult(NodeNames=[names[j] for j in passed], FailedNodes=answer.failed,
                                                      FailedAndUnresolvableNodes=answer.unresolvable))
        else:   # every name known: the reply is gathered from the generation's pre-encoded names
            idx = node_index_array(model, names)[0]
            out = gather_filter_result(model.name_keys, model.name_items, idx[answer.passed], idx[answer.soft],
                                       answer.soft_text, idx[answer.hard], answer.hard_text, answer.texts)
        gang = None
        if answer.gang is not None:
            g, p = answer.gang
            gang = GangRef(name=g.key, min_member=g.min_member, bound=p.bound, placeable=len(p.placed))
        summary = FilterSummary(nodes_in=len(names), passed=len(passed), unknown=answer.unknown,
                                message=histogram_message(answer, model) if answer.reasons else "",
                                reasons=dict(answer.reasons))
        self._record("extender-filter", t0, "passed" if passed else "rejected", facts=facts, model=model,
                     filter=summary, gang=gang,
                     timings=Timings(total_ms=0, core_ms=round(answer.core_ms, 3), gpu_ms=round(answer.gpu_ms, 3)))
        return out

    def prioritize(self, body: bytes) -> bytes:
        """ExtenderArgs -> HostPriorityList (a bad request is a BadRequest: upstream ignores errors here)."""
        with self.store.lock:   # one generation, its overlay and its policy for the whole call
            return self._prioritize(body)

    def _prioritize(self, body: bytes) -> bytes:
        t0 = time.perf_counter()
        args, names = self._args(body)
        try:
            model = self._model()
            facts = model.facts(decode_pod(args.Pod))
        except InputError as err:
            self._record("extender-prioritize", t0, "error", facts=None, model=self.store.model, raw_pod=args.Pod,
                         error=str(err))
            raise BadRequest(str(err)) from None
        self.store.expire()
        answer = decide_prioritize(self.store, model, facts, names, assume=self.assume)
        out = encode_priorities(model, answer)
        scores = [Score(node=names[j], score=int(answer.scores[j]), policy_score=round(float(answer.policy_score[j]), 4),
                        stranded_gpus_after=stranded) for j, stranded in answer.top]
        self._record("extender-prioritize", t0, "scored" if answer.chosen is not None else "no-fit", facts=facts,
                     model=model, scores=scores,
                     chosen=names[answer.chosen] if answer.chosen is not None else None,
                     timings=Timings(total_ms=0, score_ms=round(answer.score_ms, 3)))
        return out

    def preempt(self, body: bytes) -> bytes:
        """ExtenderPreemptionArgs -> ExtenderPreemptionResult (the candidates kept)."""
        with self.store.lock:   # one generation, its overlay and its policy for the whole call
            return self._preempt(body)

    def _preempt(self, body: bytes) -> bytes:
        t0 = time.perf_counter()
        args = _decode(PREEMPT_DECODER, body, "ExtenderPreemptionArgs")
        try:
            model = self._model()
            facts = model.facts(decode_pod(args.Pod))
        except InputError as err:
            self._record("extender-preempt", t0, "error", facts=None, model=self.store.model, raw_pod=args.Pod,
                         error=str(err))
            raise BadRequest(str(err)) from None
        answer = decide_preempt(model, args, max_work_lost=self.max_work_lost)
        summary = PreemptSummary(nodes_in=len(answer.kept) + len(answer.dropped), kept=sorted(answer.kept),
                                 dropped=answer.dropped)
        self._record("extender-preempt", t0, "dropped-some" if answer.dropped else "kept-all", facts=facts,
                     model=model, preempt=summary)
        return ENCODER.encode(ExtenderPreemptionResult(NodeNameToMetaVictims=answer.kept))
