"""Workload class of a pod or controller: training, inference or other — one rule for audit and the GPU map.

Training: Jobs and training CRDs (PyTorchJob, JobSet, ...), or pods with torchrun/rendezvous env or
training-operator labels. Inference: long-running servers (Deployment, StatefulSet, InferenceService,
...). Anything else (bare pods, notebooks without a controller) is "other".
"""

from __future__ import annotations

from kubegpu.model.objects import PodSpec

TRAINING = "training"
INFERENCE = "inference"
OTHER = "other"

# The one list of training-operator kinds: Kubeflow training-operator v1 and Trainer v2 jobs, and the
# batch APIs that run distributed training as a group (audit, defrag units and evictability read these).
TRAINING_OPERATOR_KINDS = frozenset({"PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "MXJob",
                                     "TrainJob"})
GROUP_TRAINING_KINDS = frozenset({"JobSet", "LeaderWorkerSet", "RayCluster", "RayJob"})
DISTRIBUTED_KINDS = TRAINING_OPERATOR_KINDS | GROUP_TRAINING_KINDS
TRAINING_KINDS = frozenset({"Job", "CronJob", "JobSet", "RayJob"}) | TRAINING_OPERATOR_KINDS
INFERENCE_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "InferenceService", "LeaderWorkerSet",
                             "RayService", "ServingRuntime"})
# torchrun / torch.distributed rendezvous: a pod with these takes part in a multi-pod job
RENDEZVOUS_ENV = ("MASTER_ADDR", "PET_MASTER_ADDR", "PET_RDZV_ENDPOINT", "PET_NNODES")
TRAINING_ENV = frozenset(RENDEZVOUS_ENV) | {"WORLD_SIZE"}
TRAINING_LABEL_PREFIXES = ("training.kubeflow.org/", "trainer.kubeflow.org/", "jobset.sigs.k8s.io/",
                           "volcano.sh/job-name")


def has_training_markers(spec: PodSpec, labels: dict[str, str]) -> bool:
    """torchrun / rendezvous env in a container, or a training-operator label."""
    names = {e.name for c in spec.containers for e in c.env}
    return bool(names & TRAINING_ENV) or any(k.startswith(TRAINING_LABEL_PREFIXES) for k in labels)


def workload_class(kind: str | None, specs: list[tuple[PodSpec, dict[str, str]]]) -> str:
    """The class of a workload whose outermost controller is `kind` (None: a bare pod)."""
    if (kind in TRAINING_KINDS) or any(has_training_markers(s, labels) for s, labels in specs):
        return TRAINING
    if kind in INFERENCE_KINDS:
        return INFERENCE
    return OTHER
