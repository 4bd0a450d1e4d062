"""VolumeZone: upstream pkg/scheduler/framework/plugins/volumezone/volume_zone_test.go.

Ported 24 of 24 PreFilter+Filter cases: TestSingleZone 14, TestMultiZone 5, TestWithBinding 5.
The TestIsSchedulableAfter* tables are queueing hints, not Filter behaviour.
"""

import pytest

from kubegpu.scheduling.versions import KubeVersion

from ..upstream.cases import UNRESOLVABLE
from .runner import node, plugin_verdict, pod, pv, pvc, pvc_volume, storage_class

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = (UNRESOLVABLE, "node(s) had no available volume zone")

SINGLE_PVS = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", labels={BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
]
MULTI_PVS = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", labels={BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={ZONE: "us-west1-c__us-west1-a"}),
]
CLAIMS = [pvc(f"PVC_{k}", volume=v) for k, v in
          [("1", "Vol_1"), ("2", "Vol_2"), ("3", "Vol_3"), ("4", "Vol_not_exist"), ("Stable_1", "Vol_Stable_1"),
           ("Stable_2", "Vol_Stable_2"), ("Stable_3", "Vol_Stable_3")]]
USELESS = {"uselessLabel": "none"}


def with_claim(claim):
    return pod("pod_1", volumes=[pvc_volume(claim)])


SINGLE = [
    ("pod without volume", pod("pod_1"), {BETA_ZONE: "us-west1-a"}, ()),
    ("node without labels", with_claim("PVC_1"), {}, ()),
    ("beta zone label matched", with_claim("PVC_1"), {BETA_ZONE: "us-west1-a", **USELESS}, ()),
    ("beta region label matched", with_claim("PVC_2"), {BETA_REGION: "us-west1", **USELESS}, ()),
    ("beta region label doesn't match", with_claim("PVC_2"), {BETA_REGION: "no_us-west1", **USELESS}, CONFLICT),
    ("beta zone label doesn't match", with_claim("PVC_1"), {BETA_ZONE: "no_us-west1-a", **USELESS}, CONFLICT),
    ("zone label matched", with_claim("PVC_Stable_1"), {ZONE: "us-west1-a", **USELESS}, ()),
    ("region label matched", with_claim("PVC_Stable_2"), {REGION: "us-west1", **USELESS}, ()),
    ("region label doesn't match", with_claim("PVC_Stable_2"), {REGION: "no_us-west1", **USELESS}, CONFLICT),
    ("zone label doesn't match", with_claim("PVC_Stable_1"), {ZONE: "no_us-west1-a", **USELESS}, CONFLICT),
    ("pv with zone and region, node with only zone", with_claim("PVC_Stable_3"), {ZONE: "us-west1-a"}, CONFLICT),
    ("pv with zone,node with beta zone", with_claim("PVC_Stable_1"), {BETA_ZONE: "us-west1-a"}, CONFLICT),
    ("pv with beta label,node with ga label, matched", with_claim("PVC_1"), {ZONE: "us-west1-a"}, ()),
    ("pv with beta label,node with ga label, don't match", with_claim("PVC_1"), {ZONE: "us-west1-b"}, CONFLICT),
]

MULTI = [
    ("node without labels", with_claim("PVC_3"), {}, ()),
    ("beta zone label matched", with_claim("PVC_3"), {BETA_ZONE: "us-west1-a", **USELESS}, ()),
    ("beta zone label doesn't match", with_claim("PVC_1"), {BETA_ZONE: "us-west1-b", **USELESS}, CONFLICT),
    ("zone label matched", with_claim("PVC_Stable_2"), {ZONE: "us-west1-a", **USELESS}, ()),
    ("zone label doesn't match", with_claim("PVC_Stable_1"), {ZONE: "us-west1-b", **USELESS}, CONFLICT),
]


@pytest.mark.parametrize("mine,labels,want", [pytest.param(*c[1:], id=f"TestSingleZone/{c[0]}") for c in SINGLE])
def test_single_zone(mine, labels, want):
    assert plugin_verdict("VolumeZone", mine, [node("host1", labels)], objects=[*SINGLE_PVS, *CLAIMS]) == want


@pytest.mark.parametrize("mine,labels,want", [pytest.param(*c[1:], id=f"TestMultiZone/{c[0]}") for c in MULTI])
def test_multi_zone(mine, labels, want):
    assert plugin_verdict("VolumeZone", mine, [node("host1", labels)], objects=[*MULTI_PVS, *CLAIMS]) == want


BINDING_OBJECTS = [
    storage_class("Class_Immediate"),
    storage_class("Class_Wait", mode="WaitForFirstConsumer"),
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pvc("PVC_1", volume="Vol_1"),
    pvc("PVC_NoSC", sc="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", sc="Class_Wait"),
    pvc("PVC_ImmediateSC", sc="Class_Immediate"),
]
BINDING_NODE = node("host1", {BETA_ZONE: "us-west1-a", **USELESS})
BINDING = [
    ("label zone failure domain matched", "PVC_1", ()),
    ("unbound volume empty storage class", "PVC_EmptySC",
     (UNRESOLVABLE, "PersistentVolumeClaim had no pv name and storageClass name")),
    ("unbound volume no storage class", "PVC_NoSC",
     (UNRESOLVABLE, 'storageclasses.storage.k8s.io "Class_0" not found')),
    ("unbound volume immediate binding mode", "PVC_ImmediateSC",
     (UNRESOLVABLE, 'VolumeBindingMode not set for StorageClass "Class_Immediate"')),
    ("unbound volume wait binding mode", "PVC_WaitSC", ()),
]


@pytest.mark.parametrize("claim,want", [pytest.param(*c[1:], id=f"TestWithBinding/{c[0]}") for c in BINDING])
def test_with_binding(claim, want):
    assert plugin_verdict("VolumeZone", with_claim(claim), [BINDING_NODE], objects=BINDING_OBJECTS) == want


def test_unbound_claim_checks_are_not_made_before_1_30():
    """Older VolumeZone only looked at claims bound to a PV (kept from the previous behaviour)."""
    old = KubeVersion(1, 29)
    assert plugin_verdict("VolumeZone", with_claim("PVC_EmptySC"), [BINDING_NODE], objects=BINDING_OBJECTS,
                          version=old) == ()


def test_node_own_beta_key_is_read_before_the_ga_one():
    """volume_zone.go Filter (not an upstream table case): a node that has the PV's beta key is
    judged by it alone, even when its GA zone label would match."""
    labels = {BETA_ZONE: "us-west1-b", ZONE: "us-west1-a"}
    assert plugin_verdict("VolumeZone", with_claim("PVC_1"), [node("host1", labels)],
                          objects=[*SINGLE_PVS, *CLAIMS]) == CONFLICT
