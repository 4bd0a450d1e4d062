"""Effective pod requests match upstream PodRequests (component-helpers/resource)."""

import pytest

from kubegpu.errors import InputError
from kubegpu.model.decode import decode_object
from kubegpu.model.resources import node_allocatable, pod_requests


def pod(spec, name="p", ns="ml"):
    return decode_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                          "spec": spec})


def c(name, requests=None, limits=None, restart_policy=None):
    out = {"name": name, "resources": {}}
    if requests:
        out["resources"]["requests"] = requests
    if limits:
        out["resources"]["limits"] = limits
    if restart_policy:
        out["restartPolicy"] = restart_policy
    return out


def test_app_containers_sum():
    p = pod({"containers": [c("a", {"cpu": "500m", "memory": "1Gi"}), c("b", {"cpu": "1", "memory": "512Mi"})]})
    assert pod_requests(p) == {"cpu": 1500, "memory": 1536 * 2**20}


def test_init_container_max_not_sum():
    # upstream: regular init containers run one at a time: max(init) vs sum(app)
    p = pod({"initContainers": [c("i1", {"cpu": "2"}), c("i2", {"cpu": "3"})],
             "containers": [c("a", {"cpu": "1"})]})
    assert pod_requests(p) == {"cpu": 3000}


def test_sidecars_add_to_app_and_to_later_init_containers():
    # upstream (KEP-753): restartable init containers keep running, so they add to the total
    # and to every init container started after them
    p = pod({"initContainers": [c("side", {"cpu": "1"}, restart_policy="Always"), c("init", {"cpu": "2"})],
             "containers": [c("a", {"cpu": "500m"})]})
    assert pod_requests(p) == {"cpu": 3000}  # max(1+0.5, 2+1)
    p2 = pod({"initContainers": [c("init", {"cpu": "2"}), c("side", {"cpu": "1"}, restart_policy="Always")],
              "containers": [c("a", {"cpu": "4"})]})
    assert pod_requests(p2) == {"cpu": 5000}  # max(4+1, 2)


def test_overhead_is_added():
    p = pod({"containers": [c("a", {"cpu": "1"})], "overhead": {"cpu": "250m", "memory": "120Mi"}})
    assert pod_requests(p) == {"cpu": 1250, "memory": 120 * 2**20}


def test_limits_default_unset_requests():
    # upstream defaulting: a GPU given only in limits is also requested
    p = pod({"containers": [c("a", {"cpu": "1"}, {"cpu": "2", "nvidia.com/gpu": 4})]})
    assert pod_requests(p) == {"cpu": 1000, "nvidia.com/gpu": 4}


def test_bad_quantity_names_object_and_field():
    p = pod({"containers": [c("a", {"cpu": "1"}), c("b", {"memory": "1.5GB"})]}, name="train-0")
    with pytest.raises(InputError) as err:
        pod_requests(p)
    assert str(err.value).startswith("Pod/ml/train-0: field spec.containers[1].resources.requests.memory: ")


def test_node_allocatable_falls_back_to_capacity():
    node = decode_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                          "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
    assert node_allocatable(node) == {"cpu": 8000, "memory": 32 * 2**30, "pods": 110}


def test_null_lists_and_maps_read_as_unset_as_the_api_server_writes_nil_slices():
    """A Go nil slice without omitempty is serialised as null (e.g. nodeSelectorTerms); a null
    item inside a list is still an error naming the field."""
    import pytest

    from kubegpu.errors import InputError
    from kubegpu.model.decode import decode_object

    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ml", "labels": None},
           "spec": {"containers": [{"name": "c", "image": "i", "env": None, "ports": None}], "tolerations": None,
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                                  {"nodeSelectorTerms": None}}}}}
    pod = decode_object(doc)
    assert pod.metadata.labels == {} and pod.spec.tolerations == []
    assert pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms == []
    doc["spec"]["containers"].append(None)
    with pytest.raises(InputError, match=r"spec.containers\[1\]"):
        decode_object(doc)
