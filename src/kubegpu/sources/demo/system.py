"""kube-system: cluster DNS (pitfall 7), the Cluster Autoscaler (pitfall 3) and the node agents.

Pitfalls: CoreDNS with one replica, no cluster-proportional-autoscaler, no NodeLocal
DNSCache; CA with the default --scale-down-delay-after-add=10m and one node group that
mixes p4de and m6i nodes. Clean: CoreDNS at the linear formula's replica count with a
`dns-autoscaler`, the `node-local-dns` DaemonSet, CA with 30m delays and one node group
per node shape.
"""

from __future__ import annotations

import json
import math

from kubegpu.model.quantity import resource_amount
from kubegpu.sources.demo.builders import ago, container, obj, pod_template, resources
from kubegpu.sources.demo.controllers import (
    Revision,
    daemonset,
    deployment,
    pdb,
    service,
)
from kubegpu.sources.demo.nodes import node_specs
from kubegpu.sources.demo.placement import CpuPlacer
from kubegpu.sources.demo.pods import PodPlacement

NS = "kube-system"
ECR = "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks"
KUBE_DNS_IP = "172.20.0.10"
NODE_LOCAL_DNS_IP = "169.254.20.10"
TOLERATE_ALL = [{"operator": "Exists"}]
# kubernetes/website dns-horizontal-autoscaler.yaml defaults (kubespray names it dns-autoscaler)
DNS_LINEAR = {"coresPerReplica": 256, "nodesPerReplica": 16, "min": 2, "max": 100,
              "preventSinglePointFailure": True, "includeUnschedulableNodes": True}
CA_MAX = {"pitfalls": {"gpu-inference": (2, 4), "training-mixed": (4, 12), "general": (3, 30)},
          "clean": {"gpu-inference": (2, 6), "gpu-training": (4, 10), "general": (3, 40)}}

COREFILE = """.:53 {
    errors
    health {
        lameduck 5s
      }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
      pods insecure
      fallthrough in-addr.arpa ip6.arpa
    }
    prometheus :9153
    forward . /etc/resolv.conf
    cache 30
    loop
    reload
    loadbalance
}
"""

NODE_LOCAL_COREFILE = f"""cluster.local:53 {{
    errors
    cache {{
            success 9984 30
            denial 9984 5
    }}
    reload
    loop
    bind {NODE_LOCAL_DNS_IP} {KUBE_DNS_IP}
    forward . __PILLAR__CLUSTER__DNS__ {{
            force_tcp
    }}
    prometheus :9253
    health {NODE_LOCAL_DNS_IP}:8080
    }}
.:53 {{
    errors
    cache 30
    reload
    loop
    bind {NODE_LOCAL_DNS_IP} {KUBE_DNS_IP}
    forward . __PILLAR__UPSTREAM__SERVERS__
    prometheus :9253
    }}
"""


def dns_replicas_linear(nodes: list[dict], params: dict = DNS_LINEAR) -> int:
    """cluster-proportional-autoscaler's linear mode: max(ceil(cores/cpr), ceil(nodes/npr)), clamped."""
    cores = sum(resource_amount("cpu", n["status"]["allocatable"]["cpu"]) for n in nodes) / 1000
    replicas = max(math.ceil(cores / params["coresPerReplica"]), math.ceil(len(nodes) / params["nodesPerReplica"]))
    if params.get("preventSinglePointFailure") and len(nodes) > 1:
        replicas = max(replicas, 2)
    return min(max(replicas, params.get("min", 1)), params.get("max", replicas))


def _config_map(name: str, data: dict, *, days: float, namespace: str = NS, labels: dict | None = None) -> dict:
    cm = obj("v1", "ConfigMap", name, namespace, created=ago(days=days), labels=labels)
    cm["data"] = data
    return cm


def _coredns(variant: str, nodes: list[dict], placer: CpuPlacer) -> list[dict]:
    labels = {"k8s-app": "kube-dns", "eks.amazonaws.com/component": "coredns"}
    ctr = container("coredns", f"{ECR}/coredns:v1.12.4-eksbuild.1", args=["-conf", "/etc/coredns/Corefile"],
                    ports=[{"containerPort": 53, "name": "dns", "protocol": "UDP"},
                           {"containerPort": 53, "name": "dns-tcp"}, {"containerPort": 9153, "name": "metrics"}],
                    mounts=[{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": True}],
                    res=resources(cpu="100m", memory="70Mi", memory_limit="170Mi"),
                    security={"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                              "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}})
    template = pod_template(labels, [ctr], dnsPolicy="Default", priorityClassName="system-cluster-critical",
                            serviceAccountName="coredns",
                            tolerations=[{"key": "CriticalAddonsOnly", "operator": "Exists"},
                                         {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
                            volumes=[{"name": "config-volume", "configMap": {
                                "name": "coredns", "defaultMode": 420,
                                "items": [{"key": "Corefile", "path": "Corefile"}]}}])
    replicas = 1 if variant == "pitfalls" else dns_replicas_linear(nodes)
    placements = tuple(PodPlacement(placer.place("100m", "70Mi"), started=ago(days=20, minutes=i))
                       for i in range(replicas))
    objs = deployment("coredns", NS, replicas=replicas, created=ago(days=200),
                      revisions=[Revision(3, template, placements, ago(days=20))],
                      selector={"k8s-app": "kube-dns"}, labels=labels, max_unavailable=1, max_surge="25%")
    objs.append(service("kube-dns", NS, selector={"k8s-app": "kube-dns"}, created=ago(days=200),
                        cluster_ip=KUBE_DNS_IP, labels={"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"},
                        ports=[{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53},
                               {"name": "metrics", "port": 9153}]))
    objs.append(_config_map("coredns", {"Corefile": COREFILE}, days=200, labels={"eks.amazonaws.com/component": "coredns"}))
    objs.append(pdb("coredns", NS, selector={"k8s-app": "kube-dns"}, max_unavailable=1, created=ago(days=200)))
    if variant == "clean":
        objs += _dns_autoscaler(placer) + _node_local_dns()
    return objs


def _dns_autoscaler(placer: CpuPlacer) -> list[dict]:
    params = json.dumps(DNS_LINEAR, separators=(",", ":"))
    ctr = container("autoscaler", "registry.k8s.io/cpa/cluster-proportional-autoscaler:v1.9.0",
                    command=["/cluster-proportional-autoscaler", "--namespace=kube-system",
                             "--configmap=dns-autoscaler", "--target=deployment/coredns",
                             f"--default-params={{\"linear\":{params}}}", "--logtostderr=true", "--v=2"],
                    res=resources(cpu="20m", memory="10Mi"))
    template = pod_template({"k8s-app": "dns-autoscaler"}, [ctr], priorityClassName="system-cluster-critical",
                            serviceAccountName="dns-autoscaler")
    placement = (PodPlacement(placer.place("20m", "10Mi"), started=ago(days=20)),)
    objs = deployment("dns-autoscaler", NS, replicas=1, created=ago(days=20),
                      revisions=[Revision(1, template, placement, ago(days=20))])
    objs.append(_config_map("dns-autoscaler", {"linear": params}, days=20))
    return objs


def _node_local_dns() -> list[dict]:
    ctr = container("node-cache", "registry.k8s.io/dns/k8s-dns-node-cache:1.26.4",
                    args=["-localip", f"{NODE_LOCAL_DNS_IP},{KUBE_DNS_IP}", "-conf", "/etc/Corefile",
                          "-upstreamsvc", "kube-dns-upstream"],
                    ports=[{"containerPort": 53, "name": "dns", "protocol": "UDP"},
                           {"containerPort": 53, "name": "dns-tcp"}, {"containerPort": 9253, "name": "metrics"}],
                    mounts=[{"name": "config-volume", "mountPath": "/etc/coredns"},
                            {"name": "xtables-lock", "mountPath": "/run/xtables.lock"}],
                    security={"capabilities": {"add": ["NET_ADMIN"]}},
                    res=resources(cpu="25m", memory="5Mi"))
    template = pod_template({"k8s-app": "node-local-dns"}, [ctr], hostNetwork=True, dnsPolicy="Default",
                            priorityClassName="system-node-critical", serviceAccountName="node-local-dns",
                            tolerations=list(TOLERATE_ALL),
                            volumes=[{"name": "xtables-lock", "hostPath": {"path": "/run/xtables.lock",
                                                                           "type": "FileOrCreate"}},
                                     {"name": "config-volume", "configMap": {
                                         "name": "node-local-dns", "defaultMode": 420,
                                         "items": [{"key": "Corefile", "path": "Corefile.base"}]}}])
    return [daemonset("node-local-dns", NS, template, created=ago(days=20), labels={"k8s-app": "node-local-dns"}),
            _config_map("node-local-dns", {"Corefile": NODE_LOCAL_COREFILE}, days=20),
            service("kube-dns-upstream", NS, selector={"k8s-app": "kube-dns"}, created=ago(days=20),
                    labels={"k8s-app": "kube-dns"},
                    ports=[{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53}]),
            service("node-local-dns", NS, selector={"k8s-app": "node-local-dns"}, headless=True,
                    created=ago(days=20), ports=[{"name": "metrics", "port": 9253}])]


def autoscaler_args(variant: str) -> list[str]:
    """The Cluster Autoscaler's command line; `--nodes=min:max:<ASG>` names every node group."""
    groups = [f"--nodes={lo}:{hi}:{name}" for name, (lo, hi) in CA_MAX[variant].items()]
    args = ["./cluster-autoscaler", "--v=4", "--stderrthreshold=info", "--cloud-provider=aws",
            "--skip-nodes-with-local-storage=false", "--expander=least-waste", *groups,
            "--balance-similar-node-groups"]
    if variant == "pitfalls":
        # defaults for the delays; the threshold was raised to "save money" on CPU nodes
        args += ["--scale-down-delay-after-add=10m", "--scale-down-utilization-threshold=0.7"]
    else:
        args += ["--scale-down-delay-after-add=30m", "--scale-down-unneeded-time=30m",
                 "--scale-down-utilization-threshold=0.5", "--scale-down-gpu-utilization-threshold=0.5"]
    return args


def _autoscaler(variant: str, nodes: list[dict], placer: CpuPlacer) -> list[dict]:
    ctr = container("cluster-autoscaler", "registry.k8s.io/autoscaling/cluster-autoscaler:v1.35.0",
                    command=autoscaler_args(variant), ports=[{"containerPort": 8085, "name": "metrics"}],
                    res=resources(cpu="100m", memory="600Mi", memory_limit="600Mi"))
    labels = {"app.kubernetes.io/name": "aws-cluster-autoscaler", "app.kubernetes.io/instance": "cluster-autoscaler"}
    template = pod_template(labels, [ctr], priorityClassName="system-cluster-critical",
                            serviceAccountName="cluster-autoscaler")
    placement = (PodPlacement(placer.place("100m", "600Mi"), started=ago(days=11)),)
    objs = deployment("cluster-autoscaler", NS, replicas=1, created=ago(days=150),
                      revisions=[Revision(4, template, placement, ago(days=11))])
    objs.append(_config_map("cluster-autoscaler-status", {"status": _ca_status(variant, nodes)}, days=150))
    return objs


def _ca_status(variant: str, nodes: list[dict]) -> str:
    """The YAML the autoscaler writes into its status ConfigMap."""
    specs = {s.name: s for s in node_specs(variant)}
    lines = ["time: 2026-11-30 11:59:52.114052931 +0000 UTC", "autoscalerStatus: Running", "clusterWide:",
             "  health:", "    status: Healthy", "    nodeCounts:", "      registered:",
             f"        total: {len(nodes)}", f"        ready: {len(nodes)}", "        notStarted: 0",
             "  scaleUp:", "    status: NoActivity",
             "  scaleDown:", "    status: NoCandidates", "nodeGroups:"]
    for name, (lo, hi) in CA_MAX[variant].items():
        count = sum(1 for s in specs.values() if s.nodegroup == name)
        lines += [f"- name: {name}", "  health:", "    status: Healthy", "    nodeCounts:", "      registered:",
                  f"        total: {count}", f"        ready: {count}",
                  f"    cloudProviderTarget: {count}", f"    minSize: {lo}", f"    maxSize: {hi}"]
    return "\n".join(lines) + "\n"


def _node_agents() -> list[dict]:
    """kube-proxy, the VPC CNI and the EBS CSI node plugin: on every node, tolerating every taint."""
    out = []
    for name, image, cpu, memory in (("kube-proxy", f"{ECR}/kube-proxy:v1.35.2-eksbuild.2", "100m", "50Mi"),
                                      ("aws-node", f"{ECR}/amazon-k8s-cni:v1.20.4-eksbuild.1", "25m", "64Mi"),
                                      ("ebs-csi-node", "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.51.0",
                                       "10m", "40Mi")):
        ctr = container(name, image, res=resources(cpu=cpu, memory=memory),
                        security={"privileged": True} if name != "ebs-csi-node" else None)
        template = pod_template({"k8s-app": name}, [ctr], hostNetwork=name != "ebs-csi-node",
                                priorityClassName="system-node-critical", tolerations=list(TOLERATE_ALL),
                                serviceAccountName=name)
        out.append(daemonset(name, NS, template, created=ago(days=200), labels={"k8s-app": name}))
    return out


def system_objects(variant: str, nodes: list[dict], placer: CpuPlacer) -> list[dict]:
    """kube-system: DNS, autoscaler, node agents (DaemonSet pods are added by the caller)."""
    objs = _coredns(variant, nodes, placer) + _autoscaler(variant, nodes, placer) + _node_agents()
    ctr = container("metrics-server", "registry.k8s.io/metrics-server/metrics-server:v0.8.0",
                    args=["--secure-port=10251", "--kubelet-preferred-address-types=InternalIP"],
                    res=resources(cpu="100m", memory="200Mi"))
    template = pod_template({"k8s-app": "metrics-server"}, [ctr], priorityClassName="system-cluster-critical",
                            serviceAccountName="metrics-server")
    placements = tuple(PodPlacement(placer.place("100m", "200Mi"), started=ago(days=30)) for _ in range(2))
    objs += deployment("metrics-server", NS, replicas=2, created=ago(days=200),
                       revisions=[Revision(2, template, placements, ago(days=30))])
    objs.append(service("metrics-server", NS, selector={"k8s-app": "metrics-server"}, created=ago(days=200),
                        ports=[{"name": "https", "port": 443, "targetPort": 10251}]))
    return objs

