"""v1 Events as `kubectl get events -o json` returns them.

kube-scheduler records through events.k8s.io (eventTime, series, no first/lastTimestamp);
the kubelet and the cluster-autoscaler use the legacy recorder (firstTimestamp,
lastTimestamp, count, source).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from kubegpu.sources.demo.builders import NOW, ago, micro_time, obj, rfc3339
from kubegpu.sources.demo.storage import NFS_PATH, NFS_SERVER, nfs_mount_options

# upstream: unschedulable pods are retried at least every podMaxInUnschedulablePodsDuration (5m)
RETRY = timedelta(minutes=5)


def _involved(pod: dict) -> dict:
    md = pod["metadata"]
    return {"apiVersion": "v1", "kind": "Pod", "name": md["name"], "namespace": md["namespace"], "uid": md["uid"]}


def _name(pod: dict, first: datetime) -> str:
    return f"{pod['metadata']['name']}.{int(first.timestamp() * 1e9):x}"


def failed_scheduling(pod: dict, message: str, *, first: datetime) -> dict:
    """The scheduler's Warning FailedScheduling event, with a series when it repeated."""
    ev = obj("v1", "Event", _name(pod, first), pod["metadata"]["namespace"], created=first)
    repeats = int((NOW - first) / RETRY)
    ev.update(action="Scheduling", eventTime=micro_time(first + timedelta(microseconds=412_331)),
              firstTimestamp=None, lastTimestamp=None, involvedObject=_involved(pod), message=message,
              reason="FailedScheduling", reportingComponent="default-scheduler",
              reportingInstance="default-scheduler-ip-10-0-5-21.ec2.internal", source={}, type="Warning")
    if repeats >= 1:
        last = first + RETRY * repeats
        ev["series"] = {"count": repeats + 1, "lastObservedTime": micro_time(last + timedelta(microseconds=87_004))}
    return ev


def _legacy(pod: dict, *, reason: str, message: str, type_: str, first: datetime, last: datetime,
            count: int, component: str, host: str | None) -> dict:
    ev = obj("v1", "Event", _name(pod, first), pod["metadata"]["namespace"], created=first)
    source = {"component": component, **({"host": host} if host else {})}
    ev.update(count=count, eventTime=None, firstTimestamp=rfc3339(first), lastTimestamp=rfc3339(last),
              involvedObject=_involved(pod), message=message, reason=reason, reportingComponent=component,
              reportingInstance=host or "", source=source, type=type_)
    return ev


def not_triggered_scale_up(pod: dict, message: str, *, first: datetime) -> dict:
    """cluster-autoscaler's Normal NotTriggerScaleUp event (counts are node groups, not nodes)."""
    count = max(1, int((NOW - first).total_seconds() // 10 // 6))  # roughly once a minute
    return _legacy(pod, reason="NotTriggerScaleUp", message=message, type_="Normal", first=first,
                   last=ago(seconds=38), count=count, component="cluster-autoscaler", host=None)


def failed_mount_events(pod: dict, volume: str, pv_name: str) -> list[dict]:
    """The kubelet's two FailedMount warnings for a pod whose NFS mount times out.

    upstream: the volume manager waits podAttachAndMountTimeout (2m3s) and then reports the
    summary; the sibling MountVolume.SetUp event carries the real cause (mount.nfs timeout).
    """
    node = pod["spec"]["nodeName"]
    started = datetime.fromisoformat(pod["status"]["startTime"])
    options = ",".join(nfs_mount_options("pitfalls"))
    target = f"/var/lib/kubelet/pods/{pod['metadata']['uid']}/volumes/kubernetes.io~nfs/{pv_name}"
    setup = (f'MountVolume.SetUp failed for volume "{pv_name}" : mount failed: exit status 32\n'
             f"Mounting command: mount\nMounting arguments: -t nfs -o {options} {NFS_SERVER}:{NFS_PATH} {target}\n"
             "Output: mount.nfs: Connection timed out\n")
    summary = (f"Unable to attach or mount volumes: unmounted volumes=[{volume}], unattached volumes=[], "
               "failed to process volumes=[]: context deadline exceeded")
    waits = int((NOW - started) / timedelta(minutes=2, seconds=3))
    return [
        _legacy(pod, reason="FailedMount", message=setup, type_="Warning", first=started + timedelta(seconds=62),
                last=ago(seconds=50), count=waits + 1, component="kubelet", host=node),
        _legacy(pod, reason="FailedMount", message=summary, type_="Warning",
                first=started + timedelta(minutes=2, seconds=3), last=ago(seconds=71), count=waits,
                component="kubelet", host=node),
    ]
