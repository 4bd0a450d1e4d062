"""One namespace scope (cli/options.SourceOptions.scope) for every command: -n, -A and the unknown-namespace note."""

import json

import pytest
from inprocess import run_inprocess

from kubegpu.model.namespaces import NamespaceScope

COMMANDS = [["status"], ["frag"], ["doctor"], ["audit"], ["defrag", "--size", "4"]]


@pytest.fixture
def run_kubegpu():
    """In process: the scope and its note are the subject here, not the process."""
    return run_inprocess


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_namespace_is_one_note_on_stderr(run_kubegpu, command):
    r = run_kubegpu(*command, "--demo", "-n", "no-such-team")
    assert r.returncode in (0, 1), r.stderr
    notes = [line for line in r.stderr.splitlines() if line.startswith("note: namespace 'no-such-team' not found")]
    assert len(notes) == 1, r.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_all_namespaces_is_the_default_and_notes_nothing(run_kubegpu, command):
    a = run_kubegpu(*command, "--demo", "-A", "-o", "json")
    plain = run_kubegpu(*command, "--demo", "-o", "json")
    assert a.returncode == plain.returncode
    strip = lambda out: {k: v for k, v in json.loads(out).items() if k != "solver"}  # noqa: E731 (solver timings)
    assert strip(a.stdout) == strip(plain.stdout)
    assert "note: namespace" not in a.stderr


def test_defrag_in_a_namespace_lists_only_its_pods(run_kubegpu):
    r = run_kubegpu("defrag", "--demo", "--size", "4", "-n", "ml-training", "-o", "json")
    assert r.returncode in (0, 1), r.stderr
    pods = json.loads(r.stdout)["pods"]
    assert pods and all(p["pod"].startswith("ml-training/") for p in pods)


def test_pod_keys_are_scoped_by_their_namespace():
    scope = NamespaceScope("ml")
    assert scope.includes_pod_key("ml/train-0") and not scope.includes_pod_key("mlx/train-0")
    assert not scope.includes_pod_key("other/ml")
    assert NamespaceScope().includes_pod_key("anything/at-all")
