"""kube-scheduler's wording and behaviour by Kubernetes version.

The event text a user sees changed over the releases; pick the words of the cluster's own
version (live server version, a snapshot's recorded version, `--k8s-version`), newest by default.
Each boundary cites the upstream change that moved it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubegpu.errors import UsageError
from kubegpu.model.integers import int_or_none, shown

_VERSION = re.compile(r"^v?([0-9]+)\.([0-9]+)(?:\.([0-9]+))?")
_MAX_PART = 2**31 - 1  # a version part beyond this is not a version (and never converted)


@dataclass(frozen=True, order=True)
class KubeVersion:
    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str | None) -> "KubeVersion":
        """'v1.34.1', '1.35', 'v1.33.2-eks-1234' -> KubeVersion; None -> the newest we know."""
        if not text:
            return NEWEST
        m = _VERSION.match(text.strip())
        parts = [int_or_none(g, lo=0, hi=_MAX_PART) for g in (m.groups("0") if m else ())]
        if not parts or None in parts:
            raise UsageError(f"not a Kubernetes version: {shown(text)} (expected e.g. 1.34 or v1.34.1)")
        return cls(*parts)

    def at_least(self, minor: int, patch: int = 0) -> bool:
        return (self.major, self.minor, self.patch) >= (1, minor, patch)

    def __str__(self) -> str:
        return f"v{self.major}.{self.minor}.{self.patch}"

    # ------------------------------------------------------------ wording
    def taint_reason(self, key: str, value: str | None) -> str:
        """TaintToleration's reason for one untolerated taint."""
        if self.at_least(35) or (self.minor == 34 and self.patch >= 2):
            # kubernetes#134740 (cherry-pick #135023 to 1.34.2): taint keys/values may be sensitive
            return "node(s) had untolerated taint(s)"
        if self.at_least(25):
            # kubernetes#109119
            return f"node(s) had untolerated taint {{{key}: {value or ''}}}"
        if self.at_least(18):
            # kubernetes#87250
            return f"node(s) had taint {{{key}: {value or ''}}}, that the pod didn't tolerate"
        return "node(s) had taints that the pod didn't tolerate"

    @property
    def node_affinity_reason(self) -> str:
        if self.at_least(22):
            return "node(s) didn't match Pod's node affinity/selector"
        if self.at_least(21):
            return "node(s) didn't match Pod's node affinity"
        return "node(s) didn't match node selector"

    @property
    def volume_node_affinity_reason(self) -> str:
        return ("node(s) didn't match PersistentVolume's node affinity" if self.at_least(22)
                else "node(s) had volume node affinity conflict")

    # ------------------------------------------------------------ behaviour
    @property
    def unresolvable_when_exceeds_allocatable(self) -> bool:
        """kubernetes#131345 (1.34): NodeResourcesFit says UAU when a request > node allocatable."""
        return self.at_least(34)

    @property
    def has_preemption_message(self) -> bool:
        """kubernetes#107775 (1.24): the FailedScheduling event carries the preemption result."""
        return self.at_least(24)

    @property
    def has_prefilter_message(self) -> bool:
        """kubernetes#110894 (1.25): a PreFilter rejection is printed once, not counted per node."""
        return self.at_least(25)

    @property
    def postfilter_double_period(self) -> bool:
        """1.25 to 1.29 appended '.' after a PostFilter message that already ended in one."""
        return self.at_least(25) and not self.at_least(30)

    @property
    def dra_postfilter(self) -> bool:
        """DynamicResources on by default (GA 1.34): its PostFilter runs before DefaultPreemption and
        says 'no new claims to deallocate' (or fails with 'not found' when PreFilter never ran)."""
        return self.at_least(34)

    @property
    def unbound_pvc_prefilter_code_unresolvable(self) -> bool:
        """Before 1.30 preemption still dry-ran nodes after VolumeBinding's PreFilter rejection
        (events read 'No preemption victims found'); from 1.30 they are 'not helpful'."""
        return self.at_least(30)

    @property
    def volume_zone_checks_unbound_claims(self) -> bool:
        """VolumeZone's PreFilter rejects a pod whose claim is missing, or unbound without a
        WaitForFirstConsumer class (volume_zone.go getPVbyPod); before 1.30 kubegpu keeps the
        older reading, bound claims only (boundary from an earlier port's notes, not re-verified)."""
        return self.at_least(30)


NEWEST = KubeVersion(1, 36, 3)


def version_of(server_version: str | None, override: str | None = None) -> KubeVersion:
    """The version whose wording to use: an explicit override, else the cluster's, else newest."""
    return KubeVersion.parse(override or server_version)
