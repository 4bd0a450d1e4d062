"""Inference workloads (namespace inference) and, in clean, the KServe local model cache.

Pitfall 8: 20 vLLM replicas read weights from one RWX NFS claim; four new replicas hang in
ContainerCreating on the mount. Pitfall 9: the Deployment is mid-rollout, so two model
versions serve at once, and nothing caches models on the nodes. Pitfall 7 (ndots): the
high-fan-out pods keep the default ndots:5.
Clean: an InferenceService whose storageUri matches a LocalModelCache on the inference
nodes' NVMe, one version, ndots 2.
"""

from __future__ import annotations

from kubegpu.sources.demo.builders import (
    GPU_TOLERATION,
    ago,
    container,
    obj,
    pod_template,
    resources,
)
from kubegpu.sources.demo.controllers import Revision, deployment, pdb, service
from kubegpu.sources.demo.nodes import INFERENCE_NODES
from kubegpu.sources.demo.placement import CpuPlacer
from kubegpu.sources.demo.pods import PodPlacement, PodState
from kubegpu.sources.demo.scenario import CHAT_REPLICAS, PLACEMENTS
from kubegpu.sources.demo.storage import LOCAL_CLASS, MODELS_PVC, bound_claim

NS = "inference"
MODEL = "llama-3.1-8b-instruct"
VERSIONS = {1: "2026-10-14", 2: "2026-11-28"}
VLLM = {1: "vllm/vllm-openai:v0.10.2", 2: "vllm/vllm-openai:v0.11.2"}
MODEL_URI = f"s3://acme-models/{MODEL}/{VERSIONS[2]}"
CACHE_NAME = "llama-3-1-8b-instruct"
NODE_GROUP = "gpu-inference-nvme"
NDOTS_2 = {"options": [{"name": "ndots", "value": "2"}]}
SHM = ({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
       {"name": "dshm", "mountPath": "/dev/shm"})


def _gpu_spec(variant: str, **extra) -> dict:
    spec = {"priorityClassName": "inference-high", "nodeSelector": {"pool": "inference"},
            "tolerations": [dict(GPU_TOLERATION)], **extra}
    if variant == "clean":
        spec["preemptionPolicy"] = "Never"
        spec["dnsConfig"] = NDOTS_2
    return spec


def _chat_template(variant: str, revision: int) -> dict:
    # clean serves the newest version only, from the cache of MODEL_URI
    revision = revision if variant == "pitfalls" else 2
    version = VERSIONS[revision]
    if variant == "pitfalls":
        model_dir, volume = f"/models/{MODEL}/{version}", {
            "name": "model", "persistentVolumeClaim": {"claimName": MODELS_PVC, "readOnly": True}}
        mount = {"name": "model", "mountPath": "/models", "readOnly": True}
        name, labels = "vllm", {"app": "chat-llama"}
    else:
        model_dir, volume = "/mnt/models", {"name": "model-cache", "persistentVolumeClaim": {
            "claimName": f"{CACHE_NAME}-{NODE_GROUP}", "readOnly": True}}
        mount = {"name": "model-cache", "mountPath": "/mnt/models", "readOnly": True}
        name = "kserve-container"
        labels = {"app": "isvc.chat-llama-predictor", "component": "predictor",
                  "serving.kserve.io/inferenceservice": "chat-llama"}
    ctr = container(name, VLLM[revision], command=["vllm", "serve", model_dir],
                    args=["--served-model-name", MODEL, "--port", "8000", "--max-model-len", "32768",
                          "--gpu-memory-utilization", "0.92"],
                    env={"MODEL_VERSION": version, "HF_HUB_OFFLINE": "1"},
                    ports=[{"containerPort": 8000, "name": "http"}], probe_port=8000,
                    mounts=[mount, SHM[1]],
                    res=resources(cpu="8", memory="96Gi", memory_limit="96Gi", gpu=1))
    labels = {**labels, "model": MODEL, "model-version": version, "workload-type": "inference"}
    return pod_template(labels, [ctr], **_gpu_spec(variant, volumes=[volume, SHM[0]]))


def _chat(variant: str) -> list[dict]:
    replicas = CHAT_REPLICAS[variant]
    revisions = []
    for number in sorted({r.revision for r in replicas}):
        if variant == "clean":
            created, started = ago(days=6), [ago(days=5, hours=i % 5) for i in range(len(replicas))]
        elif number == 1:
            created, started = ago(days=47), [ago(days=12, hours=i % 5) for i in range(len(replicas))]
        else:
            created, started = ago(minutes=16), [ago(minutes=14 - i % 3) for i in range(len(replicas))]
        placements = tuple(PodPlacement(
            r.node, state=PodState.CONTAINER_CREATING if r.stuck else PodState.RUNNING, started=started[i])
            for i, r in enumerate(x for x in replicas if x.revision == number))
        revisions.append(Revision(number, _chat_template(variant, number), placements, created))
    if variant == "pitfalls":
        objs = deployment("chat-llama", NS, replicas=len(replicas), revisions=revisions,
                          created=ago(days=47), selector={"app": "chat-llama"}, labels={"app": "chat-llama"})
        objs.append(service("chat-llama", NS, selector={"app": "chat-llama"}, created=ago(days=47),
                            ports=[{"name": "http", "port": 8000}]))
        objs.append(pdb("chat-llama", NS, selector={"app": "chat-llama"}, max_unavailable=1, created=ago(days=47)))
        return objs
    isvc = _inference_service()
    sel = {"app": "isvc.chat-llama-predictor"}
    objs = [isvc, *deployment("chat-llama-predictor", NS, replicas=len(replicas), revisions=revisions,
                              created=ago(days=6), selector=sel, owner=isvc,
                              labels={**sel, "serving.kserve.io/inferenceservice": "chat-llama"})]
    objs.append(service("chat-llama-predictor", NS, selector=sel, created=ago(days=6),
                        ports=[{"name": "http", "port": 80, "targetPort": 8000}]))
    objs.append(pdb("chat-llama", NS, selector={"serving.kserve.io/inferenceservice": "chat-llama"},
                    max_unavailable=1, created=ago(days=6)))
    return objs


def _inference_service() -> dict:
    isvc = obj("serving.kserve.io/v1beta1", "InferenceService", "chat-llama", NS, created=ago(days=6),
               generation=1, annotations={"serving.kserve.io/deploymentMode": "RawDeployment"})
    isvc["spec"] = {"predictor": {
        "minReplicas": 20, "maxReplicas": 20, "priorityClassName": "inference-high",
        "nodeSelector": {"pool": "inference"}, "tolerations": [dict(GPU_TOLERATION)], "dnsConfig": NDOTS_2,
        "model": {"modelFormat": {"name": "huggingface"}, "runtime": "kserve-vllm", "storageUri": MODEL_URI,
                  "resources": resources(cpu="8", memory="96Gi", memory_limit="96Gi", gpu=1)}}}
    isvc["status"] = {"observedGeneration": 1, "url": f"http://chat-llama.{NS}.svc.cluster.local",
                      "conditions": [{"type": t, "status": "True", "lastTransitionTime": "2026-11-24T09:14:02Z"}
                                     for t in ("IngressReady", "PredictorReady", "Ready")]}
    return isvc


def _embedding(variant: str) -> list[dict]:
    ctr = container("tei", "ghcr.io/huggingface/text-embeddings-inference:1.8",
                    args=["--model-id", "BAAI/bge-large-en-v1.5", "--port", "8080"],
                    ports=[{"containerPort": 8080, "name": "http"}], probe_port=8080,
                    res=resources(cpu="6", memory="48Gi", cpu_limit="6", memory_limit="48Gi", gpu=1))
    labels = {"app": "embedding-server", "workload-type": "inference"}
    template = pod_template(labels, [ctr], **_gpu_spec(variant))
    placements = tuple(PodPlacement(n, started=ago(days=9, hours=i)) for i, n in
                       enumerate(PLACEMENTS[variant]["embedding-server"]))
    objs = deployment("embedding-server", NS, replicas=len(placements),
                      revisions=[Revision(1, template, placements, ago(days=30))], created=ago(days=30))
    objs.append(service("embedding-server", NS, selector={"app": "embedding-server"}, created=ago(days=30),
                        ports=[{"name": "http", "port": 8080}]))
    # pitfalls: minAvailable == replicas, so no voluntary disruption is ever allowed
    objs.append(pdb("embedding-server", NS, selector={"app": "embedding-server"}, created=ago(days=30),
                    min_available=len(placements) if variant == "pitfalls" else 1))
    return objs


def _gateway(variant: str, placer: CpuPlacer) -> list[dict]:
    """The chat gateway: thousands of lookups a second (model Services, external moderation API)."""
    ctr = container("gateway", "ghcr.io/acme-ml/chat-gateway:3.7.1",
                    env={"UPSTREAM": "http://chat-llama.inference.svc.cluster.local:8000",
                         "EMBEDDINGS": "http://embedding-server.inference:8080",
                         "MODERATION_API": "https://moderation.api.acme-ml.example/v2"},
                    ports=[{"containerPort": 8080, "name": "http"}], probe_port=8080,
                    res=resources(cpu="2", memory="4Gi", memory_limit="4Gi"))
    extra = {"dnsConfig": NDOTS_2} if variant == "clean" else {}
    template = pod_template({"app": "chat-gateway", "workload-type": "gateway"}, [ctr], **extra)
    placements = tuple(PodPlacement(placer.place("2", "4Gi"), started=ago(days=4, hours=i)) for i in range(3))
    objs = deployment("chat-gateway", NS, replicas=3, revisions=[Revision(1, template, placements, ago(days=60))],
                      created=ago(days=60))
    objs.append(service("chat-gateway", NS, selector={"app": "chat-gateway"}, created=ago(days=60),
                        ports=[{"name": "http", "port": 80, "targetPort": 8080}]))
    return objs


def _model_cache() -> list[dict]:
    """KServe LocalModelNodeGroup + LocalModelCache over the inference nodes' NVMe (clean)."""
    created = ago(days=7)
    affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "pool", "operator": "In", "values": ["inference"]}]}]}}
    group = obj("serving.kserve.io/v1alpha1", "LocalModelNodeGroup", NODE_GROUP, created=created, generation=1)
    group["spec"] = {"storageLimit": "6Ti",
                     "persistentVolumeSpec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                                              "capacity": {"storage": "6Ti"}, "local": {"path": "/mnt/nvme/models"},
                                              "storageClassName": LOCAL_CLASS, "nodeAffinity": affinity},
                     "persistentVolumeClaimSpec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                                                   "resources": {"requests": {"storage": "6Ti"}},
                                                   "storageClassName": LOCAL_CLASS}}
    cache = obj("serving.kserve.io/v1alpha1", "LocalModelCache", CACHE_NAME, created=created, generation=1,
                finalizers=["localmodel.kserve.io/finalizer"])
    cache["spec"] = {"sourceModelUri": MODEL_URI, "modelSize": "16Gi", "nodeGroups": [NODE_GROUP]}
    cache["status"] = {"copies": {"available": len(INFERENCE_NODES), "total": len(INFERENCE_NODES)},
                       "nodeStatus": {n: "NodeDownloaded" for n in INFERENCE_NODES}}
    objs = [group, cache]
    for n in INFERENCE_NODES:
        node = obj("serving.kserve.io/v1alpha1", "LocalModelNode", n, created=created, generation=1)
        node["spec"] = {"localModels": [{"modelName": CACHE_NAME, "sourceModelUri": MODEL_URI,
                                         "nodeGroup": NODE_GROUP}]}
        node["status"] = {"modelStatus": {CACHE_NAME: "ModelDownloaded"}}
        objs.append(node)
    objs += bound_claim(f"{CACHE_NAME}-{NODE_GROUP}", NS, storage_class=LOCAL_CLASS, size="6Ti",
                        access="ReadWriteOnce", created=created, pv_name=f"{CACHE_NAME}-{NODE_GROUP}-{NS}",
                        owner=cache, source={"local": {"path": "/mnt/nvme/models"}, "nodeAffinity": affinity})
    return objs


def inference_objects(variant: str, placer: CpuPlacer) -> list[dict]:
    """Every running inference workload of the variant (the pending summarizer is in pending.py)."""
    objs = _chat(variant) + _embedding(variant) + _gateway(variant, placer)
    if variant == "clean":
        objs += _model_cache()
    return objs
