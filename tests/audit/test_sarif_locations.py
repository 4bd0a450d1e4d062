"""SARIF results carry physical locations (file and line, or k8s:// URIs) and meet GitHub's requirements."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from kubegpu.audit.origins import object_origins
from kubegpu.sources.snapshot import read_snapshot

from .audit_support import HERE
from .github_sarif import github_problems

SCHEMA = json.loads((HERE / "sarif-2.1.0-schema.json").read_text())
FIXTURE = HERE / "KG-802" / "fail-mount-timeouts-all-versions.yaml"


def sarif(*args: str, cwd: Path | None = None) -> dict:
    r = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "audit", *args, "-o", "sarif"],
                       capture_output=True, text=True, timeout=180, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _objects(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _assert_lines_point_at_objects(path: Path, origins) -> None:
    lines = path.read_text().splitlines()
    for ref, origin in origins.items():
        name = ref.split("/")[-1]
        assert origin.line is not None, ref
        assert name in lines[origin.line - 1], (ref, origin.line, lines[origin.line - 1])


@pytest.mark.parametrize("layout", ["yaml-stream", "yaml-list", "pretty-json-list", "compact-json-list"])
def test_every_object_gets_its_own_line(tmp_path, layout):
    objects = _objects(FIXTURE)
    target = tmp_path / ("objects.json" if "json" in layout else "objects.yaml")
    if layout == "yaml-stream":
        target.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    elif layout == "yaml-list":
        target.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}, sort_keys=True))
    elif layout == "pretty-json-list":
        target.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=4,
                                     sort_keys=True))
    else:
        target.write_text('{"apiVersion":"v1","kind":"List","items":[\n'
                          + ",\n".join(json.dumps(o, separators=(",", ":")) for o in objects) + "\n]}\n")
    origins = object_origins(read_snapshot(target))
    assert len(origins) == len(objects)
    assert {o.uri for o in origins.values()} == {str(target.as_uri())}
    _assert_lines_point_at_objects(target, origins)
    # a pod's ownerReference never steals the line of the object it names
    refs = sorted(origins, key=lambda r: origins[r].line)
    assert len({origins[r].line for r in refs}) == len(refs)


def test_each_snapshot_file_is_scanned_for_lines_once(tmp_path, monkeypatch):
    """Origins of N objects read their file once, not N times (was quadratic: 4.6 s for 280 objects)."""
    from kubegpu.audit import origins as origins_module

    objects = _objects(FIXTURE)
    target = tmp_path / "objects.yaml"
    target.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    scanned = []
    real = origins_module._name_lines
    monkeypatch.setattr(origins_module, "_name_lines", lambda path: scanned.append(path) or real(path))
    found = object_origins(read_snapshot(target))
    assert len(found) == len(objects) > 1 and scanned == [target]


def test_snapshot_sarif_points_at_the_file_and_line_and_validates(tmp_path):
    target = tmp_path / "cluster.yaml"
    target.write_text(FIXTURE.read_text())
    log = sarif("--snapshot", "cluster.yaml", cwd=tmp_path)
    jsonschema.Draft7Validator(SCHEMA).validate(log)
    assert github_problems(log, displayable=True) == []
    lines = target.read_text().splitlines()
    in_file = {f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}".replace("//", "/")
               for o in _objects(target)}
    results = log["runs"][0]["results"]
    placed = 0
    for res in results:
        loc = res["locations"][0]
        phys = loc["physicalLocation"]
        assert phys["artifactLocation"]["uri"] == "cluster.yaml"          # relative, as given
        ref = loc["logicalLocations"][0]["fullyQualifiedName"]
        if ref in in_file:
            assert ref.split("/")[-1] in lines[phys["region"]["startLine"] - 1]
            placed += 1
        else:  # a finding about an object the file does not hold (a controller inferred from pods)
            assert phys["region"]["startLine"] == 1
    assert placed >= 1


def test_demo_sarif_uses_stable_k8s_uris(demo_states):
    log = sarif("--demo")
    jsonschema.Draft7Validator(SCHEMA).validate(log)
    assert github_problems(log, displayable=False) == []
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]]
    assert all(u.startswith("k8s://demo-pitfalls/") for u in uris)
    assert "k8s://demo-pitfalls/NetworkPolicy/ml-training/training-ingress" in uris
    assert sarif("--demo")["runs"][0]["results"] == log["runs"][0]["results"]      # stable across runs


def test_github_checker_catches_a_missing_physical_location():
    log = sarif("--demo")
    del log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert any("GH1001" in p for p in github_problems(log, displayable=False))
    log = sarif("--demo")
    assert any("GH1005" in p for p in github_problems(log, displayable=True))


def test_schema_rejects_a_region_without_a_valid_start_line():
    log = sarif("--demo")
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(SCHEMA).validate(log)


def test_live_sarif_uses_the_context_in_its_uris(apiserver, tmp_path):
    objects = [d for d in yaml.safe_load_all(FIXTURE.read_text()) if d]
    apiserver.add_all(objects)
    kubeconfig = apiserver.kubeconfig(tmp_path / "kc", context="prod-east")
    log = sarif("--kubeconfig", str(kubeconfig))
    jsonschema.Draft7Validator(SCHEMA).validate(log)
    assert github_problems(log, displayable=False) == []
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris and all(u.startswith("k8s://prod-east/") for u in uris)
    assert "k8s://prod-east/Pod/inference/chat-1" in uris


def test_stdin_snapshot_gets_k8s_uris():
    r = subprocess.run([sys.executable, "-m", "kubegpu.cli.main", "audit", "--snapshot", "-", "-o", "sarif"],
                       input=FIXTURE.read_text(), capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    uris = {res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for res in json.loads(r.stdout)["runs"][0]["results"]}
    assert uris and all(u.startswith("k8s://") for u in uris)
