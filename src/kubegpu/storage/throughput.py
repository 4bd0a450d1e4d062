"""Model load time per storage class: size / throughput, with documented per-class defaults.

The seed scenario: a 14 GB model over NFS at ~200 MB/s takes 70 s, from local NVMe at ~3 GB/s
about 5 s. Throughputs are per-class defaults for one reader, overridable with --class; a
StorageClass of the cluster is classified by its provisioner and parameters (`storage_kind`).
The table in docs/audit-checks.md ("Storage classes") lists each class, its default and why.
"""

from __future__ import annotations

import re

import msgspec

from kubegpu.storage.volumes import is_local_provisioner
from kubegpu.errors import InputError
from kubegpu.model.cluster import ClusterState
from kubegpu.model.kinds import StorageClass
from kubegpu.model.quantity import parse_quantity

# bytes per second; decimal units, as disk and network vendors quote them
DEFAULT_THROUGHPUT: dict[str, float] = {
    "nfs": 200e6,          # the seed scenario's NFS figure (one client, default mount options)
    "local-nvme": 3e9,     # the seed scenario's NVMe figure (one Gen4 drive reads 6-7 GB/s at best)
    "parallel-fs": 1e9,    # Lustre / FSx for Lustre, GPFS, BeeGFS, Weka: striped over many servers
    "network-fs": 200e6,   # CephFS, GlusterFS, JuiceFS, SMB: a shared filesystem like NFS
    "object-store": 500e6,  # S3 / GCS / Blob mounts without a parallel streamer
    "block": 1e9,          # network block volumes (EBS gp3 ~1 GiB/s, PD, Azure Disk)
}
# (kind, substrings of the provisioner) in match order; parameters refine some (see storage_kind)
PROVISIONER_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("parallel-fs", ("lustre", "fsx.csi.aws.com", "beegfs", "gpfs", "spectrumscale", "weka")),
    ("nfs", ("nfs", "efs.csi.aws.com", "filestore.csi.storage.gke.io")),
    ("network-fs", ("cephfs", "glusterfs", "juicefs", "file.csi.azure.com", "smb")),
    ("object-store", ("s3", "gcs", "blob", "csi-rclone", "mountpoint")),
)
# Kubernetes quantity suffixes (model/quantity.py), as written
_QUANTITY_SUFFIXES = {"k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
# documented aliases, any case: byte units (14GB = 14G, 13GiB = 13Gi, 512B) and unambiguous letters;
# a lone "m" is refused (milli in the quantity grammar, mega to a person)
_ALIASES = {"b": "", "kb": "k", "mb": "M", "gb": "G", "tb": "T", "pb": "P", "kib": "Ki", "mib": "Mi",
            "gib": "Gi", "tib": "Ti", "pib": "Pi", "k": "k", "g": "G", "t": "T", "p": "P", "ki": "Ki",
            "mi": "Mi", "gi": "Gi", "ti": "Ti", "pi": "Pi"}
_SIZE = re.compile(r"^(?P<number>[0-9]+\.?[0-9]*|\.[0-9]+)(?P<exp>[eE][+-]?[0-9]+)?\s*(?P<unit>[a-zA-Z]*)$", re.ASCII)


def parse_size(text: str, *, field: str = "size") -> float:
    """Bytes of a size in the Kubernetes quantity grammar ('14G', '13Gi', '1e9'), with byte units as a
    documented alias ('14GB' = 14G decimal, '13GiB' = 13Gi binary, '700 MB', '512B').

    A unit is required: a bare '14' is refused rather than read as 14 bytes."""
    m = _SIZE.match(text.strip())
    if not m:
        raise InputError(f"{text!r} is not a size like 14GB, 13GiB or 200MB", field=field)
    number, unit = m["number"] + (m["exp"] or ""), m["unit"]
    if not unit and not m["exp"]:
        raise InputError(f"{text!r} has no unit: write {number}GB, {number}GiB or {number}MB", field=field)
    if unit == "m":
        raise InputError(f"{text!r}: 'm' is milli in a Kubernetes quantity; write {number}M or {number}MB",
                         field=field)
    suffix = unit if not unit or unit in _QUANTITY_SUFFIXES else _ALIASES.get(unit.lower())
    if suffix is None:
        raise InputError(f"{text!r} is not a size like 14GB, 13GiB or 200MB", field=field)
    try:
        return float(parse_quantity(number + suffix))
    except InputError:
        raise InputError(f"{text!r} is not a size like 14GB, 13GiB or 200MB", field=field) from None


def parse_throughput(text: str, *, field: str = "throughput") -> float:
    """'200MB/s', '3GB/s', '3G' -> bytes per second (positive: a time is size / throughput)."""
    rate = parse_size(text.strip().removesuffix("/s").removesuffix("ps"), field=field)
    if not rate > 0:
        raise InputError(f"throughput {text.strip()!r} must be more than 0 bytes/s", field=field)
    return rate


def parse_class_overrides(items: tuple[str, ...] | list[str]) -> dict[str, float]:
    """['nfs=150MB/s', 'local-nvme=6GB/s'] -> {class: bytes/s}."""
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise InputError(f"{item!r} is not CLASS=THROUGHPUT (e.g. nfs=200MB/s)", field="--class")
        out[name.strip()] = parse_throughput(value, field=f"--class {name.strip()}")
    return out


class LoadEstimate(msgspec.Struct, frozen=True):
    storage: str            # class name ("nfs") or StorageClass name
    kind: str               # nfs | local-nvme | object-store | block
    throughput_mb_s: float
    seconds: float
    provisioner: str | None = None


class StorageEstimate(msgspec.Struct, frozen=True):
    size_bytes: float
    size_gb: float
    estimates: list[LoadEstimate]


def load_seconds(size_bytes: float, throughput: float) -> float:
    if throughput <= 0:
        raise InputError("throughput must be positive", field="--class")
    return size_bytes / throughput


def storage_kind(sc: StorageClass) -> str:
    """Which throughput class a StorageClass falls in, from its provisioner and parameters.

    Parameters that change the backend: Azure Files with `protocol: nfs` is NFS (SMB otherwise);
    a Ceph RBD or CSI class with `fsName` is CephFS; `fsType: lustre` is Lustre."""
    provisioner = sc.provisioner.lower()
    params = {k.lower(): str(v).lower() for k, v in sc.parameters.items()}
    if is_local_provisioner(provisioner):
        return "local-nvme"
    if params.get("fstype") == "lustre" or params.get("csi.storage.k8s.io/fstype") == "lustre":
        return "parallel-fs"
    if "file.csi.azure.com" in provisioner and params.get("protocol") == "nfs":
        return "nfs"
    if "ceph" in provisioner and "fsname" in params:
        return "network-fs"
    for kind, needles in PROVISIONER_KINDS:
        if any(n in provisioner for n in needles):
            return kind
    return "block"


def estimate(size_bytes: float, throughputs: dict[str, float] | None = None,
             state: ClusterState | None = None) -> StorageEstimate:
    """Load time per class (no state) or per StorageClass of the cluster (with a state)."""
    rates = {**DEFAULT_THROUGHPUT, **(throughputs or {})}
    rows: list[LoadEstimate] = []
    classes = [sc for sc in (state.of_kind("StorageClass") if state else []) if isinstance(sc, StorageClass)]
    if classes:
        for sc in classes:
            kind = storage_kind(sc)
            rate = rates.get(sc.name, rates[kind])
            rows.append(LoadEstimate(storage=sc.name, kind=kind, throughput_mb_s=round(rate / 1e6, 1),
                                     seconds=round(load_seconds(size_bytes, rate), 1), provisioner=sc.provisioner))
    else:
        for name, rate in rates.items():
            rows.append(LoadEstimate(storage=name, kind=name if name in DEFAULT_THROUGHPUT else "custom",
                                     throughput_mb_s=round(rate / 1e6, 1),
                                     seconds=round(load_seconds(size_bytes, rate), 1)))
    rows.sort(key=lambda r: r.seconds)
    return StorageEstimate(size_bytes=size_bytes, size_gb=round(size_bytes / 1e9, 2), estimates=rows)
