"""The FailedScheduling message: written exactly as kube-scheduler writes it, and read back.

upstream (framework/types.go FitError.Error): "0/N nodes are available: " then either the
PreFilter message, or the histogram of every failing node's reasons, each entry "%v %v"
(count, reason) and the entries sorted as plain strings (so "10 ..." sorts before "2 ...");
then the PostFilter message (DynamicResources, then DefaultPreemption's "preemption: ...").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec

from kubegpu.scheduling.versions import KubeVersion

NO_NODES = "0/{n} nodes are available"
PREEMPTION_PREFIX = "preemption: "
DRA_NO_CLAIMS = "no new claims to deallocate"
DRA_STATE_NOT_FOUND = "not found"  # DynamicResources PostFilter when its PreFilter never ran
EVENT_NOTE_LIMIT = 1024            # validation.NoteLengthLimit: events are cut, conditions are not


def histogram(reason_counts: Mapping[str, int]) -> list[str]:
    """upstream sortReasonsHistogram: "count reason" entries in plain string order."""
    return sorted(f"{count} {reason}" for reason, count in reason_counts.items() if count)


def fit_error_message(num_nodes: int, *, reason_counts: Mapping[str, int] | None = None,
                      prefilter_message: str | None = None, postfilter_message: str | None = None,
                      version: KubeVersion) -> str:
    """The FitError text for one scheduling attempt, in the given version's format."""
    text = NO_NODES.format(n=num_nodes) + ":"
    if prefilter_message and version.has_prefilter_message:
        text += f" {prefilter_message}."
    else:
        counts = dict(reason_counts or {})
        if prefilter_message:  # before 1.25 the PreFilter status was recorded for every node
            counts = {prefilter_message: num_nodes}
        entries = histogram(counts)
        if entries:
            text += f" {', '.join(entries)}."
    if postfilter_message:
        text += f" {postfilter_message}" + ("." if version.postfilter_double_period else "")
    return text


# ---------------------------------------------------------------- reading event text

class ReasonCount(msgspec.Struct, frozen=True):
    count: int
    reason: str
    plugin: str | None = None
    code: str | None = None


class PreemptionPart(msgspec.Struct, frozen=True):
    total_nodes: int | None = None
    reasons: list[ReasonCount] = []
    message: str | None = None  # e.g. "not eligible due to preemptionPolicy=Never."


class ParsedEvent(msgspec.Struct):
    """A FailedScheduling message of any version, as data."""

    total_nodes: int | None
    reasons: list[ReasonCount]
    prefilter: str | None = None
    preemption: PreemptionPart | None = None
    postfilter_other: list[str] = []
    truncated: bool = False
    version_hints: list[str] = []
    raw: str = ""


_HEAD = re.compile(r"^0/([0-9]{1,19}) nodes are (?:un)?available:\s*", re.S)
_LEGACY_HEAD = re.compile(r"^No nodes are available that match all of the (?:following )?predicates:*\s*", re.S)
_ENTRY_SPLIT = re.compile(r", (?=[0-9]+ )")
_ENTRY = re.compile(r"^([0-9]{1,19}) (.+)$", re.S)  # 19 digits: int64, never a huge int
_LEGACY_ENTRY = re.compile(r"^(.+?) \(([0-9]{1,19})\)$")

# (pattern, plugin, code) for every reason string upstream has used; first match wins.
REASON_CATALOG: tuple[tuple[re.Pattern, str, str], ...] = tuple(
    (re.compile(p), plugin, code) for p, plugin, code in (
        (r"^node\(s\) were unschedulable$", "NodeUnschedulable", "UnschedulableAndUnresolvable"),
        (r"^node\(s\) had unknown conditions$", "NodeUnschedulable", "UnschedulableAndUnresolvable"),
        (r"^node\(s\) didn't match the requested (node name|hostname)$", "NodeName", "UnschedulableAndUnresolvable"),
        (r"^node\(s\) had (untolerated )?taints?(\(s\))?\b.*$", "TaintToleration", "UnschedulableAndUnresolvable"),
        (r"^node\(s\) didn't match (Pod's node affinity(/selector)?|node selector|scheduler-enforced node affinity)$",
         "NodeAffinity", "UnschedulableAndUnresolvable"),
        (r"^pod affinity terms conflict$", "NodeAffinity", "UnschedulableAndUnresolvable"),
        (r"^node\(s\) didn't have free ports for the requested pod ports$", "NodePorts", "Unschedulable"),
        (r"^(Too many pods|Insufficient \S+)$", "NodeResourcesFit", "Unschedulable"),
        (r"^node\(s\) had no available disk$", "VolumeRestrictions", "Unschedulable"),
        (r"^node\(s\) unavailable due to PersistentVolumeClaim with ReadWriteOncePod", "VolumeRestrictions",
         "Unschedulable"),
        (r"^node\(s\) exceed max volume count$", "NodeVolumeLimits", "Unschedulable"),
        (r"CSI driver is not installed on the node$", "NodeVolumeLimits", "Unschedulable"),
        (r"^pod has unbound immediate PersistentVolumeClaims$", "VolumeBinding", "UnschedulableAndUnresolvable"),
        (r"^node\(s\) (didn't find available persistent volumes to bind|didn't match PersistentVolume's node "
         r"affinity|had volume node affinity conflict|did not have enough free storage|unavailable due to one or "
         r"more pvc\(s\) bound to non-existent pv\(s\))$", "VolumeBinding", "UnschedulableAndUnresolvable"),
        (r"^persistentvolumeclaim \".*\" (not found|is being deleted)$", "VolumeBinding",
         "UnschedulableAndUnresolvable"),
        (r"^node\(s\) had no available volume zone$", "VolumeZone", "UnschedulableAndUnresolvable"),
        (r"^node\(s\) didn't match pod topology spread constraints \(missing required label\)$",
         "PodTopologySpread", "UnschedulableAndUnresolvable"),
        (r"^node\(s\) didn't match pod topology spread constraints$", "PodTopologySpread", "Unschedulable"),
        (r"^node\(s\) didn't match pod affinity rules$", "InterPodAffinity", "UnschedulableAndUnresolvable"),
        (r"^node\(s\) didn't match pod anti-affinity rules$", "InterPodAffinity", "Unschedulable"),
        (r"^node\(s\) didn't satisfy existing pods anti-affinity rules$", "InterPodAffinity", "Unschedulable"),
        (r"^node\(s\) didn't match pod affinity/anti-affinity$", "InterPodAffinity", "Unschedulable"),
        (r"^(cannot allocate all claims|resourceclaim .*|.*device class .* does not exist)$", "DynamicResources",
         "UnschedulableAndUnresolvable"),
        (r"^node\(s\) didn't match Pod's required features$", "NodeDeclaredFeatures", "UnschedulableAndUnresolvable"),
        (r"^node\(s\) didn't satisfy plugin", "PreFilterResult", "UnschedulableAndUnresolvable"),
        (r"^Preemption is not helpful for scheduling$", "DefaultPreemption", "UnschedulableAndUnresolvable"),
        (r"^No preemption victims found for incoming pod$", "DefaultPreemption", "UnschedulableAndUnresolvable"),
        (r"^waiting for scheduling gates", "SchedulingGates", "UnschedulableAndUnresolvable"),
    ))


def classify_reason(reason: str) -> tuple[str | None, str | None]:
    """(plugin, code) that emits a reason string, for any version's wording."""
    for pattern, plugin, code in REASON_CATALOG:
        if pattern.search(reason):
            return plugin, code
    return None, None


def _entries(text: str) -> list[ReasonCount]:
    out = []
    for part in _ENTRY_SPLIT.split(text):
        part = part.strip()
        m = _ENTRY.match(part)
        if not m:
            continue
        plugin, code = classify_reason(m.group(2))
        out.append(ReasonCount(int(m.group(1)), m.group(2), plugin, code))
    return out


def _split_main(rest: str) -> tuple[str, str]:
    """Main part (up to the first '. ') and what follows (the PostFilter messages)."""
    cut = rest.find(". ")
    if cut < 0:
        return rest.rstrip(".").strip(), ""
    return rest[:cut].strip(), rest[cut + 2:].strip()


def parse_event_message(text: str) -> ParsedEvent:
    """Parse a FailedScheduling note of any version into a structured histogram.

    Handles: the PreFilter form, the 1.25-1.29 double period, the DynamicResources PostFilter
    prefix ('no new claims to deallocate, '), the preemption part, 1024-char truncation (' ...'),
    Volcano's 'nodes are unavailable' and the pre-1.10 'No nodes are available that match...'.
    """
    raw = text
    s = text.strip()
    truncated = s.endswith(" ...")
    if truncated:
        s = s[:-4]
    hints: list[str] = []
    m = _HEAD.match(s)
    if not m:
        legacy = _LEGACY_HEAD.match(s)
        if not legacy:
            return ParsedEvent(total_nodes=None, reasons=[], postfilter_other=[s] if s else [],
                               truncated=truncated, raw=raw)
        reasons = []
        for part in s[legacy.end():].rstrip(".").split(", "):
            lm = _LEGACY_ENTRY.match(part.strip())
            if lm:
                plugin, code = classify_reason(lm.group(1))
                reasons.append(ReasonCount(int(lm.group(2)), lm.group(1), plugin, code))
        return ParsedEvent(total_nodes=None, reasons=reasons, truncated=truncated, raw=raw,
                           version_hints=["pre-1.10 predicate format"])
    total = int(m.group(1))
    main, post = _split_main(s[m.end():])
    entries = _entries(main) if re.match(r"^[0-9]+ ", main) else []
    prefilter = None if entries or not main else main
    preemption = None
    other: list[str] = []
    if post.endswith(".."):
        hints.append("double period: kube-scheduler 1.25 to 1.29")
    if post.startswith(DRA_NO_CLAIMS):
        hints.append("DynamicResources PostFilter: kube-scheduler 1.34 or newer")
        post = post[len(DRA_NO_CLAIMS):].lstrip(", ").strip()
    if post.startswith(PREEMPTION_PREFIX):
        inner = post[len(PREEMPTION_PREFIX):].strip()
        pm = _HEAD.match(inner)
        if pm:
            preemption = PreemptionPart(total_nodes=int(pm.group(1)),
                                        reasons=_entries(inner[pm.end():].rstrip(".").strip()))
        else:
            preemption = PreemptionPart(message=inner.rstrip(".") + ".")
    elif post:
        other.append(post.rstrip("."))
    reasons_text = " ".join(e.reason for e in entries)
    if "untolerated taint(s)" in reasons_text:
        hints.append("taint values hidden: kube-scheduler 1.34.2 or newer")
    elif "untolerated taint {" in reasons_text:
        hints.append("taint shown as {key: value}: kube-scheduler 1.25 to 1.34.1")
    elif "that the pod didn't tolerate" in reasons_text:
        hints.append("kube-scheduler 1.17 to 1.24 taint wording")
    return ParsedEvent(total_nodes=total, reasons=entries, prefilter=prefilter, preemption=preemption,
                       postfilter_other=other, truncated=truncated, version_hints=hints, raw=raw)
