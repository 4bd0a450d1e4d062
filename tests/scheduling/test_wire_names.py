"""Field names whose v1 wire name is not plain camelCase (hostIP, podIP, providerID, podCIDR, ...)
decode from what the API server really sends (msgspec's camel renaming would say hostIp)."""

import msgspec

from kubegpu.model import objects

# (struct, attribute, v1 JSON name) for every initialism field the model reads
WIRE_NAMES = [
    (objects.ContainerPort, "host_ip", "hostIP"),
    (objects.PodStatus, "host_ip", "hostIP"),
    (objects.PodStatus, "host_ips", "hostIPs"),
    (objects.PodStatus, "pod_ip", "podIP"),
    (objects.PodStatus, "pod_ips", "podIPs"),
    (objects.NodeSpec, "provider_id", "providerID"),
    (objects.NodeSpec, "pod_cidr", "podCIDR"),
    (objects.NodeSpec, "pod_cidrs", "podCIDRs"),
    (objects.ServiceSpec, "cluster_ip", "clusterIP"),
]


def test_initialism_fields_use_the_v1_wire_name():
    for struct, attr, wire in WIRE_NAMES:
        info = {f.name: f.encode_name for f in msgspec.structs.fields(struct)}
        assert info[attr] == wire, f"{struct.__name__}.{attr} encodes as {info[attr]}, v1 says {wire}"


def test_no_other_field_is_an_initialism_renamed_to_camel_case():
    """Any field ending in _ip/_ips/_id/_cidr/_cidrs/_uid must carry an explicit v1 name."""
    suspects = []
    for name in dir(objects):
        struct = getattr(objects, name)
        if isinstance(struct, type) and issubclass(struct, msgspec.Struct):
            for f in msgspec.structs.fields(struct):
                tail = f.name.rsplit("_", 1)[-1] if "_" in f.name else ""
                if tail in ("ip", "ips", "id", "cidr", "cidrs") and f.encode_name[-len(tail):] == tail.capitalize():
                    suspects.append(f"{name}.{f.name} -> {f.encode_name}")
    assert not suspects, suspects


def test_pod_and_node_decode_the_real_wire_names():
    pod = msgspec.json.decode(b'{"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, '
                              b'"hostPort": 8080, "hostIP": "10.0.0.1"}]}]}, "status": {"hostIP": "10.1.1.1", '
                              b'"podIP": "10.2.0.5", "podIPs": [{"ip": "10.2.0.5"}], "hostIPs": [{"ip": "10.1.1.1"}]}}',
                              type=objects.PodTemplateSpec)
    assert pod.spec.containers[0].ports[0].host_ip == "10.0.0.1"
    status = msgspec.json.decode(b'{"hostIP": "10.1.1.1", "podIP": "10.2.0.5", "podIPs": [{"ip": "10.2.0.5"}]}',
                                 type=objects.PodStatus)
    assert (status.host_ip, status.pod_ip, status.pod_ips[0].ip) == ("10.1.1.1", "10.2.0.5", "10.2.0.5")
    spec = msgspec.json.decode(b'{"providerID": "aws:///us-east-1a/i-0abc", "podCIDR": "10.2.0.0/24", '
                               b'"podCIDRs": ["10.2.0.0/24"]}', type=objects.NodeSpec)
    assert spec.provider_id.startswith("aws://") and spec.pod_cidr == "10.2.0.0/24" and spec.pod_cidrs
