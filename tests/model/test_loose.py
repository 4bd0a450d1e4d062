"""The one tolerant accessor for loosely typed fields: defaults when missing, one error naming the field when wrong."""

import pytest

from kubegpu.errors import InputError
from kubegpu.model.loose import loose

JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "vj", "namespace": "ml"},
       "spec": {"minAvailable": 2, "tasks": [{"name": "w", "replicas": 4}, "oops"], "labels": {"a.b/c": "x"}}}


def test_values_defaults_and_nested_paths():
    view = loose(JOB)
    assert view.int("spec.minAvailable") == 2
    assert view.int("spec.missing", default=7) == 7
    assert view.dict("status") == {} and view.list("status.conditions") == []
    assert view.str(("spec", "labels", "a.b/c")) == "x"
    assert view.at("spec").int("minAvailable") == 2


@pytest.mark.parametrize("body, read, field", [
    ({**JOB, "spec": "a string"}, lambda v: v.int("spec.minAvailable"), "spec"),
    ({**JOB, "spec": {"minAvailable": "two"}}, lambda v: v.int("spec.minAvailable"), "spec.minAvailable"),
    ({**JOB, "spec": {"minAvailable": True}}, lambda v: v.int("spec.minAvailable"), "spec.minAvailable"),
    (JOB, lambda v: list(v.items("spec.tasks")), "spec.tasks[1]"),
    ({**JOB, "spec": {"labels": {"a.b/c": 3}}}, lambda v: v.str(("spec", "labels", "a.b/c")), "spec.labels[a.b/c]"),
])
def test_a_wrong_shape_names_object_and_field(body, read, field):
    with pytest.raises(InputError) as info:
        read(loose(body))
    assert info.value.obj == "Job/ml/vj" and info.value.field == field


def test_a_whole_number_float_is_an_int_and_items_know_their_path():
    assert loose({**JOB, "spec": {"minAvailable": 3.0}}).int("spec.minAvailable") == 3
    first = next(loose({**JOB, "spec": {"tasks": [{"replicas": "x"}]}}).items("spec.tasks"))
    with pytest.raises(InputError) as info:
        first.int("replicas")
    assert info.value.field == "spec.tasks[0].replicas"
