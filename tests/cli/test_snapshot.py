"""`kubegpu snapshot -o FILE`: one v1 List of everything kubegpu reads, from any source, exactly as read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from apiserver.fixtures import SHARED_K8S, renamed_copies, shared_objects
from kubegpu.jsontext import dump_json
from kubegpu.sources.documents import SNAPSHOT_INFO_API, SNAPSHOT_INFO_KIND, load_cluster
from kubegpu.sources.live import DEFAULT_KINDS, read_live
from kubegpu.status import cluster_status

NODE_FIXTURE = SHARED_K8S / "node_list_gpu_rke2_vgpu_a16.json"
CONFIGMAP_FIXTURE = SHARED_K8S / "timeslicing_configmap_multi_profile_v100_a100_l40.yaml"


@pytest.fixture
def fixtures_present():
    if not NODE_FIXTURE.exists() or not CONFIGMAP_FIXTURE.exists():
        pytest.skip("shared k8s fixtures (../shared/fixtures/k8s beside the project) are not available")


def read_list(path: Path) -> dict:
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        assert data[:2] == b"\x1f\x8b"
        data = gzip.decompress(data)
    return json.loads(data)


def status_json(run_kubegpu, *source: str) -> dict:
    result = run_kubegpu("status", *source, "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_demo_round_trip_is_exact(run_kubegpu, tmp_path):
    demo = run_kubegpu("status", "--demo", "-o", "json")
    assert demo.returncode == 0, demo.stderr
    out = tmp_path / "demo.json"
    result = run_kubegpu("snapshot", "--demo", "--file", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(f"wrote {out}: ")
    from_demo = json.loads(demo.stdout)
    from_file = status_json(run_kubegpu, "--snapshot", str(out))
    # `source` names where the data was read from (the demo vs. the file); everything else is equal
    assert {**from_file, "source": None} == {**from_demo, "source": None}
    first = read_list(out)["items"][0]
    assert (first["apiVersion"], first["kind"], first["source"]) == (SNAPSHOT_INFO_API, SNAPSHOT_INFO_KIND,
                                                                     "demo:pitfalls")


def test_snapshot_of_dumps_keeps_every_object(run_kubegpu, tmp_path, fixtures_present):
    out = tmp_path / "dump.json.gz"
    result = run_kubegpu("snapshot", "--snapshot", str(NODE_FIXTURE), "--snapshot", str(CONFIGMAP_FIXTURE),
                         "--file", str(out))
    assert result.returncode == 0, result.stderr
    written = read_list(out)
    assert (written["apiVersion"], written["kind"]) == ("v1", "List")
    info, *items = written["items"]
    assert info["kind"] == SNAPSHOT_INFO_KIND and info["capturedAt"].endswith("Z")
    assert items == shared_objects()
    assert status_json(run_kubegpu, "--snapshot", str(out))["nodes"] == \
        status_json(run_kubegpu, "--snapshot", str(NODE_FIXTURE))["nodes"]


def test_live_snapshot_writes_the_served_bytes(apiserver, run_kubegpu, tmp_path, fixtures_present):
    objects = shared_objects() + renamed_copies(shared_objects()[0], 4)
    apiserver.add_all(objects)
    kubeconfig = apiserver.kubeconfig(tmp_path / "kc")
    out = tmp_path / "live.json"
    result = run_kubegpu("snapshot", "--kubeconfig", str(kubeconfig), "--file", str(out))
    assert result.returncode == 0, result.stderr
    assert "Kubernetes v1.33.2" in result.stderr

    info, *items = read_list(out)["items"]
    assert info["serverVersion"] == {"gitVersion": "v1.33.2"}
    assert info["source"] == "live:fake"
    assert len(items) == len(objects)
    # byte for byte: each item as the server sent it in the List (after the spliced-in apiVersion/kind)
    text = out.read_bytes()
    for node in apiserver.objects("v1", "nodes"):
        served = json.dumps({k: v for k, v in node.items() if k not in ("apiVersion", "kind")}).encode()
        assert b'{"apiVersion":"v1","kind":"Node",' + served[1:] in text
    # and it loads back to the same cluster
    live = json.loads(dump_json(cluster_status(load_cluster(read_live(kubeconfig=str(kubeconfig), context=None)))))
    offline = status_json(run_kubegpu, "--snapshot", str(out))
    assert {**offline, "source": None} == {**live, "source": None}
    assert offline["server_version"] == "v1.33.2"


def test_snapshot_of_a_snapshot_keeps_version_time_and_origin(apiserver, run_kubegpu, tmp_path):
    apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-a"}})
    first = tmp_path / "first.json.gz"
    second = tmp_path / "second.json"
    assert run_kubegpu("snapshot", "--kubeconfig", str(apiserver.kubeconfig(tmp_path / "kc")),
                       "--file", str(first)).returncode == 0
    result = run_kubegpu("snapshot", "--snapshot", str(first), "--file", str(second))
    assert result.returncode == 0, result.stderr
    a, b = read_list(first), read_list(second)
    assert b["items"][0] == a["items"][0]  # same SnapshotInfo: v1.33.2, capture time, live:fake
    assert b["items"][1:] == a["items"][1:]
    assert [i["kind"] for i in b["items"]].count(SNAPSHOT_INFO_KIND) == 1


def test_stdout_output(run_kubegpu, fixtures_present):
    result = run_kubegpu("snapshot", "--snapshot", str(NODE_FIXTURE), "-o", "json")
    assert result.returncode == 0, result.stderr
    written = json.loads(result.stdout)
    assert [i["kind"] for i in written["items"]] == [SNAPSHOT_INFO_KIND, "Node"]


def test_bad_input_writes_nothing(run_kubegpu, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "lots"}}}]}}]}))
    out = tmp_path / "out.json"
    result = run_kubegpu("snapshot", "--snapshot", str(bad), "--file", str(out))
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert "Pod/ml/p" in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == [bad]


def test_unreachable_cluster_writes_nothing(apiserver, run_kubegpu, tmp_path):
    kubeconfig = apiserver.kubeconfig(tmp_path / "kc")
    url = apiserver.url
    apiserver.stop()
    out = tmp_path / "out.json.gz"
    result = run_kubegpu("snapshot", "--kubeconfig", str(kubeconfig), "--file", str(out))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"error: cannot reach {url}: connection refused"]
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kc"]


@pytest.mark.parametrize("args, option", [(["-n", "ml"], "-n"), (["--k8s-version", "1.30"], "--k8s-version")])
def test_options_that_do_not_apply_are_neither_listed_nor_accepted(run_kubegpu, tmp_path, args, option):
    assert f" {option}," not in run_kubegpu("snapshot", "--help").stdout
    assert f" {option} " not in run_kubegpu("snapshot", "--help").stdout
    result = run_kubegpu("snapshot", "--demo", *args, "--file", str(tmp_path / "x.json"))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"error: No such option '{option}' (see 'kubegpu snapshot --help')"]
    assert not (tmp_path / "x.json").exists()


def test_without_a_file_the_list_goes_to_stdout(run_kubegpu):
    result = run_kubegpu("snapshot", "--demo")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["kind"] == "List"


def test_every_listed_kind_is_kept_in_a_live_snapshot(apiserver, run_kubegpu, tmp_path):
    """One object of every built-in kind kubegpu lists goes in, and comes out in the file."""
    objects = []
    for kind in DEFAULT_KINDS:
        if kind.optional:
            continue
        api_version = f"{kind.group}/{kind.versions[0]}" if kind.group else kind.versions[0]
        meta = {"name": f"one-{kind.plural}"}
        if kind.namespaced:
            meta["namespace"] = "ml"
        objects.append({"apiVersion": api_version, "kind": kind.kind, "metadata": meta})
    apiserver.add_all(objects)
    out = tmp_path / "all.json"
    result = run_kubegpu("snapshot", "--kubeconfig", str(apiserver.kubeconfig(tmp_path / "kc")), "--file", str(out))
    assert result.returncode == 0, result.stderr
    kinds = sorted((i["apiVersion"], i["kind"]) for i in read_list(out)["items"][1:])
    assert kinds == sorted((o["apiVersion"], o["kind"]) for o in objects)


def test_old_dash_o_file_still_writes_with_a_deprecation_note(run_kubegpu, tmp_path):
    out = tmp_path / "demo.yaml"
    result = run_kubegpu("snapshot", "--demo", "-o", str(out))
    assert result.returncode == 0, result.stderr
    wrote, note = result.stderr.splitlines()  # the note comes once the command has succeeded
    assert note.startswith("note: -o FILE is deprecated; use --file") and wrote.startswith(f"wrote {out}: ")
    import yaml

    written = yaml.safe_load(out.read_text())  # the name says YAML, so YAML it is (not JSON in a .yaml)
    assert not out.read_text().lstrip().startswith("{")
    assert written["kind"] == "List" and written["items"][0]["kind"] == SNAPSHOT_INFO_KIND


def test_yaml_and_json_snapshots_load_to_the_same_cluster(run_kubegpu, tmp_path):
    as_yaml, as_json = tmp_path / "c.yml", tmp_path / "c.json"
    assert run_kubegpu("snapshot", "--demo", "--file", str(as_yaml)).returncode == 0
    assert run_kubegpu("snapshot", "--demo", "-o", "json", "--file", str(as_json)).returncode == 0
    assert status_json(run_kubegpu, "--snapshot", str(as_yaml)) == status_json(run_kubegpu, "--snapshot", str(as_json))
