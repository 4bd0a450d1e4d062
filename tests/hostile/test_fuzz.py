"""Mutated real objects against every command: exit 0/1/2 only, one stderr line on 2, no file written on 2.

Hypothesis walks into a real object (the trimmed demo and the shared fixtures), replaces one value
with a hostile one (wrong type, negative or absurd quantity, non-ASCII digits, markup, control
sequences, deep nesting, huge numbers) and runs a command in-process. Bounded examples (about a
minute in all); a few cases also run as real subprocesses.
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inprocess import run_inprocess
from .conftest import run
from .corpus import as_list, fresh

COMMANDS = [
    ["status", "-o", "wide"], ["status", "-o", "json"], ["frag"], ["why", "--all", "-o", "wide"],
    ["why", "--all", "-o", "json"], ["audit", "-o", "wide"], ["audit", "-o", "sarif"], ["doctor"],
    ["defrag", "--size", "2", "-o", "wide"], ["storage", "estimate", "--size", "14GB"],
]
HANG_BOUND = 120.0  # seconds: a generous hang detector, not a speed target

QUANTITIES = ["-3", "-1", "1e30", "8Ei", "9223372036854775807", "١٢", "1" * 300, "0.5", "1.5Gi", "NaN",
              "+Inf", "1e-30", "", " 1", "1 ", "0x10", "1_000", "9.9e18", "1000000"]
STRINGS = ["big-[bold red]boom[/]", "[/dev/nvidia0 /dev/nvidiactl]", "[/models]", "\x1b]0;pwned\x07",
           "\x1b[2J\x1b[31mred", "a\x00b", "\u202eevil", "x" * 5000, "é漢字", "\r\n", "[", "]", "%s%n"]
hostile = st.one_of(
    st.sampled_from(QUANTITIES), st.sampled_from(STRINGS),
    st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([None, True, False, 0, -1, 1.5, 1e308]),
    st.just([]), st.just({}), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3),
                                                                                   st.integers(), max_size=2),
    st.integers(1, 300).map(lambda n: json.loads("[" * n + "]" * n)),
)


def mutate(objs: list, data) -> str:
    """Replace one value somewhere in one object; returns the path (for the failure report)."""
    index = data.draw(st.integers(0, len(objs) - 1), label="object")
    node, path = objs[index], [objs[index].get("kind", "?")]
    for _ in range(data.draw(st.integers(1, 6), label="depth")):
        if isinstance(node, dict) and node:
            key = data.draw(st.sampled_from(sorted(node, key=str)), label="key")
            child = node[key]
            if not isinstance(child, (dict, list)) or not child or data.draw(st.booleans(), label="stop"):
                node[key] = data.draw(hostile, label="value")
                return ".".join(map(str, path + [key]))
            node, path = child, path + [key]
        elif isinstance(node, list) and node:
            i = data.draw(st.integers(0, len(node) - 1), label="index")
            child = node[i]
            if not isinstance(child, (dict, list)) or not child or data.draw(st.booleans(), label="stop"):
                node[i] = data.draw(hostile, label="value")
                return ".".join(map(str, path + [i]))
            node, path = child, path + [i]
        else:
            break
    objs[index] = data.draw(hostile, label="whole object") if isinstance(node, (dict, list)) and not node else \
        objs[index]
    return ".".join(map(str, path))


def check(result, args, where) -> None:
    assert result.code in (0, 1, 2), f"{args} on {where}: exit {result.code}: {result.stderr[-500:]}"
    if result.code == 2:
        lines = [ln for ln in result.err_lines if not ln.startswith(("warning:", "note:"))]
        assert len(lines) == 1, f"{args} on {where}: {result.stderr[-800:]}"
        assert "Traceback" not in result.stderr


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_mutated_cluster_every_command(tmp_path_factory, data):
    objs = fresh()
    where = mutate(objs, data)
    folder = tmp_path_factory.mktemp("fuzz")
    dump = folder / "cluster.json"
    dump.write_text(json.dumps(as_list(objs)))
    args = data.draw(st.sampled_from(COMMANDS), label="command")
    started = time.monotonic()
    result = run_inprocess(*args, "--snapshot", str(dump))
    assert time.monotonic() - started < HANG_BOUND, f"{args} on {where}: took too long"
    check(result, args, where)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_mutated_cluster_snapshot_writes_all_or_nothing(tmp_path_factory, data):
    objs = fresh()
    where = mutate(objs, data)
    folder = tmp_path_factory.mktemp("snap")
    dump = folder / "in.json"
    dump.write_text(json.dumps(as_list(objs)))
    target = folder / data.draw(st.sampled_from(["out.json", "out.yaml", "out.json.gz"]), label="target")
    result = run_inprocess("snapshot", "--snapshot", str(dump), "--file", str(target))
    check(result, ["snapshot"], where)
    if result.code == 2:
        assert sorted(p.name for p in folder.iterdir()) == ["in.json"], "a file was written on exit 2"
    else:
        assert result.code == 0 and target.exists()


@pytest.mark.parametrize("args", [["status"], ["why", "--all", "-o", "json"], ["audit"]])
def test_real_processes_on_a_hostile_cluster(tmp_path, args):
    objs = fresh()
    objs[0]["metadata"]["name"] = "big-[bold red]boom[/]\x1b]0;x\x07"
    objs.append({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                 "metadata": {"name": "vj", "namespace": "ml"}, "spec": "a string"})
    dump = tmp_path / "c.json"
    dump.write_text(json.dumps(as_list(objs)))
    result = run(*args, "--snapshot", str(dump), timeout=HANG_BOUND)
    check(result, args, "hostile cluster")
