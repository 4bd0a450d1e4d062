"""`--help` lists only options a command honours; `--k8s-version` changes wording, never the reported version."""

import json

import pytest
from inprocess import run_inprocess


@pytest.fixture
def run_kubegpu():
    """In process: what --help lists and what --k8s-version changes are the subject, not the process."""
    return run_inprocess


@pytest.mark.parametrize("command", ["doctor", "audit"])
def test_k8s_version_never_replaces_the_clusters_reported_version(run_kubegpu, command):
    plain = run_kubegpu(command, "--demo", "-o", "json")
    worded = run_kubegpu(command, "--demo", "--k8s-version", "1.28", "-o", "json")
    assert plain.returncode in (0, 1) and worded.returncode in (0, 1), worded.stderr
    version = json.loads(plain.stdout).get("server_version")
    if command == "doctor":
        assert version == "v1.35.2"  # the demo's SnapshotInfo
    assert json.loads(worded.stdout).get("server_version") == version


def test_a_malformed_k8s_version_is_refused_before_reading(run_kubegpu):
    r = run_kubegpu("doctor", "--demo", "--k8s-version", "latest")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--k8s-version 'latest'" in r.stderr


@pytest.mark.parametrize("command, refused", [
    (["status"], ["--k8s-version"]),
    (["frag"], ["--k8s-version"]),
    (["simulate", "run"], ["-n", "--namespace", "-A", "--all-namespaces", "--k8s-version"]),
    (["models", "plan"], ["-n", "--namespace", "-A", "--all-namespaces", "--k8s-version"]),
])
def test_options_a_command_ignores_are_neither_listed_nor_accepted(run_kubegpu, command, refused):
    shown = run_kubegpu(*command, "--help").stdout
    for option in refused:
        assert f" {option} " not in shown and f" {option}," not in shown, option
    value = {"-A": [], "--all-namespaces": []}.get(refused[0], ["1.30" if "version" in refused[0] else "ml"])
    r = run_kubegpu(*command, "--demo", refused[0], *value)
    assert r.returncode == 2 and f"No such option '{refused[0]}'" in r.stderr


@pytest.mark.parametrize("command, kept", [
    (["status"], ["-n", "-A"]), (["frag"], ["-n", "-A"]),
    (["why"], ["-n", "-A", "--k8s-version"]), (["doctor"], ["-n", "-A", "--k8s-version"]),
    (["audit"], ["-n", "-A", "--k8s-version"]), (["defrag"], ["-n", "-A", "--k8s-version"]),
])
def test_options_a_command_honours_stay_listed(run_kubegpu, command, kept):
    shown = run_kubegpu(*command, "--help").stdout
    for option in kept:
        assert f" {option} " in shown or f" {option}," in shown, option
