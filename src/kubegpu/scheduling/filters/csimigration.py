"""In-tree volume -> CSI driver translation, as far as NodeVolumeLimits needs it.

upstream csi-translation-lib maps a migrated in-tree volume to its CSI driver and volume handle;
nodevolumelimits/utils.go isCSIMigrationOn says migration is on for AWS EBS, GCE PD, Azure Disk
(and Cinder, not modelled here) whenever the node has a CSINode. Only the fields that decide the
(driver, handle) pair are translated: EBS, GCE PD and Azure Disk.
"""

from __future__ import annotations

from typing import Any

from kubegpu.model.kinds import CSINode, PersistentVolume

AWS_EBS = ("kubernetes.io/aws-ebs", "ebs.csi.aws.com")
GCE_PD = ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io")
AZURE_DISK = ("kubernetes.io/azure-disk", "disk.csi.azure.com")
CINDER = ("kubernetes.io/cinder", "cinder.csi.openstack.org")
IN_TREE_TO_CSI = dict([AWS_EBS, GCE_PD, AZURE_DISK, CINDER])
UNSPECIFIED = "UNSPECIFIED"
_ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
_REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")


def migration_on(csinode: CSINode | None, plugin: str) -> bool:
    """upstream isCSIMigrationOn: these plugins are always migrated once a CSINode exists."""
    return csinode is not None and plugin in IN_TREE_TO_CSI


def _ebs_handle(source: dict[str, Any]) -> str | None:
    vid = str(source.get("volumeID") or "")
    if not vid.startswith("aws://"):
        return vid or None
    return vid[len("aws://"):].split("/", 1)[-1].strip("/") or None  # aws://zone/vol-id


def _gce_handle(source: dict[str, Any], labels: dict[str, str] | None) -> str | None:
    name = source.get("pdName")
    if not name:
        return None
    zone = next((labels[k] for k in _ZONE_LABELS if labels and labels.get(k)), "")
    if "__" in zone:  # a regional disk
        region = next((labels[k] for k in _REGION_LABELS if labels and labels.get(k)), UNSPECIFIED)
        return f"projects/{UNSPECIFIED}/regions/{region}/disks/{name}"
    return f"projects/{UNSPECIFIED}/zones/{zone or UNSPECIFIED}/disks/{name}"


def _azure_handle(source: dict[str, Any]) -> str | None:
    return source.get("diskURI") or None


def translate(spec, labels: dict[str, str] | None = None) -> tuple[str, str] | None:
    """(in-tree plugin name, CSI volume handle) of a volume or PV spec's in-tree source, if migratable."""
    if spec.aws_elastic_block_store is not None:
        handle = _ebs_handle(spec.aws_elastic_block_store)
        return (AWS_EBS[0], handle) if handle else None
    if spec.gce_persistent_disk is not None:
        handle = _gce_handle(spec.gce_persistent_disk, labels)
        return (GCE_PD[0], handle) if handle else None
    if spec.azure_disk is not None:
        handle = _azure_handle(spec.azure_disk)
        return (AZURE_DISK[0], handle) if handle else None
    return None


def is_inline_migratable(volume) -> bool:
    return (volume.aws_elastic_block_store is not None or volume.gce_persistent_disk is not None
            or volume.azure_disk is not None)


def pv_driver_handle(pv: PersistentVolume, csinode: CSINode | None) -> tuple[str, str] | None:
    """upstream getCSIDriverInfo for a bound PV: its CSI source, else the translated in-tree one."""
    csi = pv.spec.csi
    if csi:
        return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
    found = translate(pv.spec, pv.metadata.labels)
    if found is None or not migration_on(csinode, found[0]):
        return None
    return IN_TREE_TO_CSI[found[0]], found[1]
