"""docs/audit-checks.md, generated from the catalog (a test fails when the file is stale)."""

from __future__ import annotations

from kubegpu.audit.catalog import CATALOG, PITFALLS
from kubegpu.storage.throughput import DEFAULT_THROUGHPUT, PROVISIONER_KINDS


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def catalog_markdown() -> str:
    lines = [
        "# Audit checks",
        "",
        "Generated from `src/kubegpu/audit/catalog.py`; do not edit by hand. `kubegpu audit --list-checks` prints "
        "the same list.",
        "",
        "Suppress a check on one object with the annotation `kubegpu.io/ignore: KG-101,KG-202` (or `pitfall:3`, "
        "`*`); suppress by kind / namespace / name and override severities or parameters in `--config`.",
        "",
        "| ID | Pitfall | Severity | Title | Remediation | Parameters |",
        "|---|---|---|---|---|---|",
    ]
    for c in CATALOG:
        params = ", ".join(f"`{k}={v}`" for k, v in c.params.items()) or "-"
        lines.append(f"| {c.id} | {c.pitfall} {_cell(PITFALLS[c.pitfall])} | {c.severity} | {_cell(c.title)} | "
                     f"{_cell(c.remediation)} | {params} |")
    lines += ["", "## Why each check exists", ""]
    for c in CATALOG:
        lines.append(f"- **{c.id}** {_cell(c.title)}: {_cell(c.rationale)}")
    lines += ["", "## Namespaces (`-n NS`, `-A`)", "",
              "The checks always read the whole cluster. `-n NS` reports findings about objects of NS and every "
              "cluster-scoped finding (Nodes, StorageClasses, PersistentVolumes, PriorityClasses, `Cluster/cluster`); "
              "each finding's `scope` is `namespace` or `cluster`, and the table marks the latter "
              "\"(cluster-scoped)\". Findings about objects of other namespaces (kube-system's CoreDNS included) "
              "are left out, and the score counts only what is reported. No `-n` (or `-A`) means all namespaces; "
              "an unknown namespace is a one-line note on stderr.",
              "", "## Storage classes (`kubegpu storage estimate`)", "",
              "A StorageClass is classified by its provisioner and parameters; the load time of a model is its size "
              "divided by the class's sustained read throughput for one reader (override with `--class NAME=RATE`). "
              "The NFS and local NVMe figures are the seed scenario's order-of-magnitude numbers (one Gen4 NVMe drive "
              "reads 6-7 GB/s at best); block is about EBS gp3's measured ~1 GiB/s; the parallel-filesystem figure is "
              "a conservative per-reader default (FSx for Lustre and similar scale with the file system's size and "
              "stripe count), so measure yours and pass it with `--class`.",
              "", "| class | default | provisioners (and parameters) |", "|---|---|---|"]
    for kind, rate in DEFAULT_THROUGHPUT.items():
        needles = dict(PROVISIONER_KINDS).get(kind, ())
        extra = {"local-nvme": "local provisioners (no-provisioner, local-path, TopoLVM, OpenEBS local, ...)",
                 "block": "anything else (EBS, PD, Azure Disk, Ceph RBD)",
                 "nfs": "Azure Files with `protocol: nfs`", "parallel-fs": "any class with `fsType: lustre`",
                 "network-fs": "Azure Files over SMB, Ceph CSI with `fsName`"}.get(kind, "")
        listed = ", ".join(f"`{n}`" for n in needles)
        lines.append(f"| {kind} | {rate / 1e6:g} MB/s | {'; '.join(x for x in (listed, extra) if x)} |")
    return "\n".join(lines) + "\n"
