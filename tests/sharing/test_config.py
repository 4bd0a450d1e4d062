"""The device plugin config, checked field by field against the sharing facts (NVIDIA/k8s-device-plugin
api/config/v1; GPU Operator time-slicing docs)."""

import copy
import re
from pathlib import Path

import pytest
import yaml

from kubegpu.sharing.config import CONFIG_LABEL, configmap, manifest_yaml, sharing_config, validate_config

FACTS = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "live-scheduling-facts.md"


@pytest.mark.parametrize("method", ["timeSlicing", "mps"])
def test_generated_configs_are_valid(method):
    assert validate_config(sharing_config(method, 4)) == []


def test_mps_has_no_fail_requests_flag():
    assert "failRequestsGreaterThanOne" not in sharing_config("mps", 2)["sharing"]["mps"]


def broken(mutate):
    cfg = sharing_config("timeSlicing", 4)
    mutate(cfg)
    return validate_config(cfg)


@pytest.mark.parametrize("mutate, expected", [
    (lambda c: c.update(version="v2"), "version: must be v1"),
    (lambda c: c["flags"].update(migStrategy="all"), "flags.migStrategy"),
    (lambda c: c["sharing"].update(mps=copy.deepcopy(c["sharing"]["timeSlicing"])), "exactly one of timeSlicing or mps"),
    (lambda c: c["sharing"]["timeSlicing"]["resources"][0].update(replicas=1), "resources[0].replicas"),
    (lambda c: c["sharing"]["timeSlicing"]["resources"][0].update(replicas="4"), "resources[0].replicas"),
    (lambda c: c["sharing"]["timeSlicing"]["resources"][0].update(rename="x"), "resources[0].rename: ignored"),
    (lambda c: c["sharing"]["timeSlicing"]["resources"][0].update(devices="all"), "resources[0].devices: ignored"),
    (lambda c: c["sharing"]["timeSlicing"]["resources"][0].update(name="amd.com/gpu"), "resources[0].name"),
    (lambda c: c["sharing"]["timeSlicing"].update(renameByDefault="yes"), "renameByDefault: must be true or false"),
    (lambda c: c["sharing"]["timeSlicing"].update(resources=[]), "resources: a non-empty list"),
])
def test_each_field_is_checked(mutate, expected):
    errors = broken(mutate)
    assert any(expected in e for e in errors), errors


def test_mps_rules():
    cfg = sharing_config("mps", 4)
    cfg["sharing"]["mps"]["failRequestsGreaterThanOne"] = True
    cfg["sharing"]["mps"]["resources"][0]["name"] = "nvidia.com/mig-1g.10gb"
    cfg["flags"]["migStrategy"] = "mixed"
    errors = validate_config(cfg)
    assert any("failRequestsGreaterThanOne: not a field of mps" in e for e in errors)
    assert any("MPS shares only nvidia.com/gpu" in e for e in errors)
    assert any("using --mig-strategy=mixed is not supported with MPS" in e for e in errors)


def test_time_slicing_takes_mig_resources():
    cfg = sharing_config("timeSlicing", 2)
    cfg["sharing"]["timeSlicing"]["resources"][0]["name"] = "nvidia.com/mig-1g.10gb"
    assert validate_config(cfg) == []


def test_configmap_round_trips_as_the_operator_reads_it():
    cfg = sharing_config("timeSlicing", 4)
    cm = yaml.safe_load(manifest_yaml(configmap("a100-ts-x4", cfg)))
    assert cm["kind"] == "ConfigMap" and cm["metadata"]["namespace"] == "gpu-operator"
    assert yaml.safe_load(cm["data"]["a100-ts-x4"]) == cfg


@pytest.mark.skipif(not FACTS.is_file(), reason="../shared/reference/live-scheduling-facts.md not present")
def test_every_field_we_write_is_in_the_facts():
    text = FACTS.read_text()
    section = " ".join(text[text.index("GPU sharing: NVIDIA device plugin"):].split())
    for word in ("version: v1", "migStrategy", "sharing.timeSlicing", "sharing.mps", "renameByDefault",
                 "failRequestsGreaterThanOne", "resources: [{name, replicas}]", CONFIG_LABEL,
                 "using --mig-strategy=mixed is not supported with MPS"):
        assert word in section, word
    assert re.search(r"`rename`.*`devices`", section)
