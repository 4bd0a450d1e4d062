"""VolumeRestrictions: upstream pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions_test.go.

Ported 22 of 22 PreFilter+Filter cases: TestGCEDiskConflicts 5, TestAWSDiskConflicts 4,
TestRBDDiskConflicts 4, TestISCSIDiskConflicts 4, TestAccessModeConflicts 5 (ReadWriteOncePod).
Event and queueing-hint tests are not Filter behaviour.
"""

import pytest

from .cases import UNRESOLVABLE, UNSCHEDULABLE, node, plugin_status, pod, verdict

DISK = (UNSCHEDULABLE, "node(s) had no available disk")
RWOP = (UNSCHEDULABLE, "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
                       "already in-use by another pod")


def vol(name, **source):
    return {"name": name, **source}


GCE = {"gcePersistentDisk": {"pdName": "foo"}}
GCE2 = {"gcePersistentDisk": {"pdName": "bar"}}
AWS = {"awsElasticBlockStore": {"volumeID": "foo"}}
AWS2 = {"awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01",
                   "fsType": "ext4", "lun": 0}}
ISCSI2 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01",
                    "fsType": "ext4", "lun": 0}}


def with_volume(source):
    return pod(volumes=[vol("v", **source)]) if source is not None else pod()


def disk_cases(test, state, state2, *, no_restriction=False):
    rows = [
        (test, "nothing", None, None, ()),
        (test, "one state", None, state, ()),
        (test, "same state", state, state, DISK),
        (test, "different state", state2, state, ()),
    ]
    if no_restriction:
        rows.append((test, "pod with a volume that doesn't have restrictions", {}, None, ()))
    return [pytest.param(*r[2:], id=f"{r[0]}/{r[1]}") for r in rows]


# volume_restrictions_test.go TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts
@pytest.mark.parametrize("mine,theirs,want", [
    *disk_cases("TestGCEDiskConflicts", GCE, GCE2, no_restriction=True),
    *disk_cases("TestAWSDiskConflicts", AWS, AWS2),
    *disk_cases("TestRBDDiskConflicts", RBD, RBD2),
    *disk_cases("TestISCSIDiskConflicts", ISCSI, ISCSI2),
])
def test_disk_conflicts(mine, theirs, want):
    existing = [with_volume(theirs)] if theirs is not None else []
    assert verdict(plugin_status("VolumeRestrictions", with_volume(mine), [node("node-1")], existing,
                                 on="node-1")) == want


def claim(name, mode):
    """A claim bound to its own PV: upstream's single-plugin test never runs VolumeBinding, whose
    PreFilter would otherwise reject the unbound claim before this plugin's verdict matters (bound =
    volumeName plus the PV controller's bind-completed annotation, as upstream's binder reads it)."""
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default",
                         "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"accessModes": [mode], "volumeName": f"pv-{name}"}, "status": {"phase": "Bound"}}


def volumes_for(claims):
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": c["spec"]["volumeName"]},
             "spec": {"accessModes": c["spec"]["accessModes"], "capacity": {"storage": "1Gi"},
                      "claimRef": {"name": c["metadata"]["name"], "namespace": "default"}},
             "status": {"phase": "Bound"}} for c in claims]


def pvc_pod(name, *claims):
    return pod(name, node_name="node-1",
               volumes=[vol(f"v{i}", persistentVolumeClaim={"claimName": c}) for i, c in enumerate(claims)])


RWOP1, RWOP2, RWX = claim("claim-with-rwop-1", "ReadWriteOncePod"), claim("claim-with-rwop-2", "ReadWriteOncePod"), \
    claim("claim-with-rwx", "ReadWriteMany")
ONE = pvc_pod("pod-with-one-pvc", "claim-with-rwop-1")
TWO = pvc_pod("pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2")
RWX_POD = pvc_pod("pod-with-rwx", "claim-with-rwx")


def pending(doc):
    doc = {**doc, "spec": {k: v for k, v in doc["spec"].items() if k != "nodeName"}}
    return doc


# volume_restrictions_test.go TestAccessModeConflicts
@pytest.mark.parametrize("mine,existing,claims,want", [
    pytest.param(pod(), [], [], (), id="nothing"),
    pytest.param(ONE, [], [], (UNRESOLVABLE, 'persistentvolumeclaim "claim-with-rwop-1" not found'),
                 id="failed to get PVC"),
    pytest.param(ONE, [RWX_POD], [RWOP1, RWX], (), id="no access mode conflict"),
    pytest.param(pvc_pod("pod-with-one-conflict", "claim-with-rwop-1"), [ONE, RWX_POD], [RWOP1, RWX], RWOP,
                 id="access mode conflict, unschedulable"),
    pytest.param(pvc_pod("pod-with-two-conflicts", "claim-with-rwop-1", "claim-with-rwop-2"), [TWO, RWX_POD],
                 [RWOP1, RWOP2, RWX], RWOP, id="two conflicts, unschedulable"),
])
def test_access_mode_conflicts(mine, existing, claims, want):
    got = plugin_status("VolumeRestrictions", pending(mine), [node("node-1")], existing,
                        [*claims, *volumes_for(claims)], on="node-1")
    assert verdict(got) == want


# volume_restrictions.go isVolumeConflict: rules the upstream table does not reach (not upstream
# test names): read-only mounts share, EBS never does, RBD images clash on any shared monitor.
@pytest.mark.parametrize("mine,theirs,want", [
    pytest.param({"gcePersistentDisk": {"pdName": "foo", "readOnly": True}},
                 {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}, (), id="gce pd read-only twice shares"),
    pytest.param({"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}, GCE, DISK,
                 id="gce pd read-only next to read-write clashes"),
    pytest.param({"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}},
                 {"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}, DISK, id="ebs never shares"),
    pytest.param({"iscsi": {**ISCSI["iscsi"], "readOnly": True}}, {"iscsi": {**ISCSI["iscsi"], "readOnly": True}}, (),
                 id="iscsi read-only twice shares"),
    pytest.param({"rbd": {**RBD["rbd"], "monitors": ["b", "c"]}}, RBD, DISK, id="rbd clashes on one shared monitor"),
    pytest.param({"rbd": {**RBD["rbd"], "image": "other"}}, RBD, (), id="rbd other image on same monitors"),
    pytest.param({"rbd": {**RBD["rbd"], "readOnly": True}}, {"rbd": {**RBD["rbd"], "readOnly": True}}, (),
                 id="rbd read-only twice shares"),
])
def test_is_volume_conflict_rules(mine, theirs, want):
    got = plugin_status("VolumeRestrictions", with_volume(mine), [node("node-1")], [with_volume(theirs)], on="node-1")
    assert verdict(got) == want


def test_disk_conflict_is_reported_before_read_write_once_pod_in_use():
    """volume_restrictions.go Filter: satisfyVolumeConflicts runs before satisfyReadWriteOncePod."""
    mine = pvc_pod("p", "claim-with-rwop-1")
    mine["spec"]["volumes"].append(vol("disk", **GCE))
    disk_user = with_volume(GCE)
    disk_user["spec"]["nodeName"] = "node-1"
    got = [plugin_status("VolumeRestrictions", pending(mine), [node("node-1"), node("node-2")],
                         [disk_user, pvc_pod("user", "claim-with-rwop-1")],
                         [RWOP1, *volumes_for([RWOP1])], on=n) for n in ("node-1", "node-2")]
    assert verdict(got[0]) == DISK  # the disk clash on node-1 is named first
    assert verdict(got[1]) == RWOP
