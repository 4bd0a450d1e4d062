"""Taint.text: the one `key=value:Effect` spelling (kubectl taint's syntax) for every message that names a taint."""

from kubegpu.model.objects import Taint


def test_taint_text_with_and_without_a_value():
    assert Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule").text == "nvidia.com/gpu=present:NoSchedule"
    assert Taint(key="dedicated", effect="NoExecute").text == "dedicated:NoExecute"
    assert Taint(key="dedicated", value="", effect="NoSchedule").text == "dedicated:NoSchedule"
