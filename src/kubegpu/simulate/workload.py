"""The unit the simulator schedules: a job of one or more identical pods (a gang when more than one).

A job is either `batch` (it needs `work` seconds of running time; preemption loses what was not
checkpointed) or `service` (a replica that lives until `end`, whatever happens to it in between;
evicted replicas are recreated by their controller and lose nothing but time).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubegpu.placement.task import Task

BATCH = "batch"
SERVICE = "service"
DEFAULT_PRIORITY_CLASS = ""


@dataclass(frozen=True)
class PriorityClass:
    """scheduling.k8s.io/v1 PriorityClass as the scheduler uses it."""

    name: str
    value: int = 0
    preemption_policy: str = "PreemptLowerPriority"  # or "Never"


@dataclass(frozen=True)
class Selector:
    """Where a pod may go: nodeSelector labels and the taints it tolerates ("key=value:Effect" / "key")."""

    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[str, ...] = ()


@dataclass
class Job:
    """One workload item; `pods` identical pods placed all-or-nothing (min_member of them, here all)."""

    id: int
    name: str
    cls: str                      # workload class (generator or trace class) for per-class stats
    submit: float
    task: Task
    pods: int = 1
    kind: str = BATCH
    work: float = 0.0             # batch: seconds of running time needed
    end: float = 0.0              # service: absolute time the replica is deleted
    priority: PriorityClass = field(default_factory=lambda: PriorityClass(DEFAULT_PRIORITY_CLASS))
    selector: Selector = field(default_factory=Selector)
    checkpoint_interval: float = 0.0   # 0 = no checkpoints
    restart_overhead: float = 0.0      # seconds lost at every restart (image pull, load, NCCL init)
    scheduling_timeout: float = 0.0    # gangs: give up after this long pending (0 = never)
    safe_to_evict: bool = True         # cluster-autoscaler.kubernetes.io/safe-to-evict
    controller: bool = True            # owned by a controller that recreates it (drain rule "replicated")
    local_storage: bool = False        # emptyDir/hostPath: blocks scale-down (drain rule "localstorage")
    origin: str = ""                   # where it came from ("file: field"), for error messages

    @property
    def gpus(self) -> float:
        """Physical GPUs the whole job holds (fractional pods count their share)."""
        return self.pods * self.task.total_gpu_milli / 1000.0
