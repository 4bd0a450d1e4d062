"""The journal: torn and corrupt files, a journal that cannot be written (disk full), the cluster identity."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import uuid

import pytest
from livecluster import options, refuse_evictions

from kubegpu.defrag.executor import Executor
from kubegpu.defrag.identity import ClusterIdentity, mismatch
from kubegpu.defrag.journal import Journal
from kubegpu.errors import InputError


def test_a_torn_last_line_is_cut_on_resume_and_the_journal_stays_resumable(world):
    w = world
    assert Executor(w.api, Journal(w.journal), options(max_moves=1)).apply(w.plan).status == "stopped"
    whole = w.journal.read_bytes()
    w.journal.write_bytes(whole + b'{"event":"evict-req')  # the process died mid-write
    report = Executor(w.api, Journal(w.journal), options(max_moves=1)).resume()
    assert report.status == "stopped"
    data = w.journal.read_bytes()
    assert data.startswith(whole) and b"evict-req\x22" not in data[len(whole):len(whole) + 20]
    assert all(json.loads(line) for line in data.splitlines())  # every line whole: a second resume works
    assert Executor(w.api, Journal(w.journal), options()).resume().status == "finished"
    w.assert_clean()


@pytest.mark.parametrize("damage, words", [
    (lambda lines: lines[:2] + [b"{not json"] + lines[2:], "line 3 is not JSON"),
    (lambda lines: lines + [b'["a", "list"]'], "is a JSON list"),
    (lambda lines: lines + [b'{"event": "cordoned"}'], "field 'node' missing"),
    (lambda lines: lines + [b'{"event": "teleported", "node": "x"}'], "unknown event 'teleported'"),
    (lambda lines: lines + [b'{"event": "cordoned", "node": "\xff\xfe"}'], "not UTF-8"),
    (lambda lines: lines + [b'{"event": "cordoned", "node": ' + b"[" * 100 + b"]" * 100 + b"}"], "nested too deeply"),
    (lambda lines: lines[1:], "the plan record must come first"),
    (lambda lines: [lines[0].replace(b'"to":"gpu-', b'"to":"gpx-', 1)] + lines[1:], "does not match its recorded hash"),
    (lambda lines: lines + [b'{"event": "finished", "status": "meh", "message": ""}'], "unknown final status"),
])
def test_any_other_damage_is_refused_and_nothing_is_touched(world, damage, words):
    w = world
    assert Executor(w.api, Journal(w.journal), options(max_moves=1)).apply(w.plan).status == "stopped"
    patches = list(w.emulator.cordon_patches)
    lines = w.journal.read_bytes().splitlines()
    w.journal.write_bytes(b"\n".join(damage(lines)) + b"\n")
    before = w.journal.read_bytes()
    with pytest.raises(InputError, match=words):
        Executor(w.api, Journal(w.journal), options()).resume()
    assert w.journal.read_bytes() == before and w.emulator.cordon_patches == patches
    assert len(w.emulator.evictions) == 1


class FullDisk:
    """The journal's file system fills up after `room` more writes: write() raises ENOSPC."""

    def __init__(self, room: int) -> None:
        self.room = room

    def __call__(self, path, mode):
        outer = self
        fh = open(path, mode)

        class Handle:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                fh.close()

            def write(self, data):
                if outer.room <= 0:
                    fh.write(data[: len(data) // 2])  # a partial write reaches the disk first
                    fh.flush()
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                outer.room -= 1
                return fh.write(data)

            def flush(self):
                fh.flush()

            def fileno(self):
                return fh.fileno()

        return Handle()


@pytest.mark.parametrize("room", [2, 3, 4, 5, 7])
def test_a_full_disk_stops_uncordons_first_and_reports_what_was_not_journaled(world, room):
    w = world
    report = Executor(w.api, Journal(w.journal, opener=FullDisk(room)), options()).apply(w.plan)
    assert report.status == "stopped" and report.resumable
    assert "cannot write the journal" in report.message and "No space left" in report.message
    assert not w.node_cordoned(w.plan.cordon[0]) and report.uncordoned == w.plan.cordon
    assert report.unrecorded and report.unrecorded[-1].startswith("finished")
    assert any(u.startswith("uncordoned") for u in report.unrecorded)
    assert w.journal.read_bytes().endswith(b"\n")  # the half-written record was cut back
    intents = {r["uid"] for r in Journal(w.journal).read() if r["event"] == "evict-request"}
    assert set(w.evicted_uids()) <= intents  # nothing is sent whose intent could not be journaled
    # space is back: resume reconciles the unjournaled undo with the live cluster and finishes
    again = Executor(w.api, Journal(w.journal), options()).resume()
    assert again.status == "finished", again.message
    assert w.evicted_uids() == [m.uid for m in w.plan.moves]
    w.assert_clean()


def test_a_journal_that_cannot_be_started_changes_nothing(world):
    w = world
    with pytest.raises(InputError, match="nothing was changed"):
        Executor(w.api, Journal(w.journal, opener=FullDisk(0)), options()).apply(w.plan)
    assert w.emulator.cordon_patches == [] and w.emulator.evictions == []


@pytest.fixture
def small_tmpfs(tmp_path):
    """A real 64 KiB tmpfs (needs root and mount permission; skipped otherwise)."""
    mnt = tmp_path / f"tmpfs-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a size-limited tmpfs here: {r.stderr.strip() or r.returncode}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(folder) -> None:
    """Fill the file system with a filler file, page by page, until it refuses."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError as err:
        assert err.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_real_full_file_system_mid_run(world, small_tmpfs):
    w = world
    journal = small_tmpfs / "journal.jsonl"

    class FillAfterPlan(Journal):
        def start(self, *a, **kw):
            super().start(*a, **kw)
            _fill(small_tmpfs)  # the disk is now full except for the slack of the journal's last page

    refusals = refuse_evictions(w.server, 60)  # a long PDB wait: every 429 is journaled, until the last free page is used
    report = Executor(w.api, FillAfterPlan(journal), options(eviction_deadline_s=1e6, backoff_max_s=1.0)
                      ).apply(w.plan)
    assert report.status == "stopped" and "No space left" in report.message
    assert not w.node_cordoned(w.plan.cordon[0])
    assert journal.read_bytes().endswith(b"\n")
    (small_tmpfs / "filler").unlink()
    refusals["n"] = 0
    again = Executor(w.api, Journal(journal), options()).resume()
    assert again.status == "finished", again.message
    w.assert_clean()


def test_identity_compares_the_cluster_uid_first_then_server_and_ca():
    a = ClusterIdentity(server="https://a:6443", ca_sha256="ca1", cluster_uid="u1", context="prod")
    assert mismatch(a, ClusterIdentity(server="https://lb:443", ca_sha256="ca9", cluster_uid="u1")) is None
    assert "kube-system uid" in mismatch(a, ClusterIdentity(server="https://a:6443", ca_sha256="ca1",
                                                            cluster_uid="u2"))
    no_uid = ClusterIdentity(server="https://a:6443", ca_sha256="ca1")
    assert mismatch(no_uid, ClusterIdentity(server="https://a:6443/", ca_sha256="ca1")) is None
    assert "server" in mismatch(no_uid, ClusterIdentity(server="https://b:6443", ca_sha256="ca1"))
    assert "CA" in mismatch(no_uid, ClusterIdentity(server="https://a:6443", ca_sha256="ca2"))
    assert "cannot read namespace kube-system" in mismatch(a, ClusterIdentity(server="https://a:6443",
                                                                              ca_sha256="ca1"))


def test_the_identity_of_a_tls_cluster_carries_its_ca_fingerprint_and_kube_system_uid(server_certs, tmp_path):
    import base64
    import hashlib

    from apiserver.server import FakeApiServer
    from livecluster import namespace

    from kubegpu.defrag.api import LightkubeApi

    with FakeApiServer(certs=server_certs) as server:
        server.add(namespace("kube-system", "uid-tls"))
        api = LightkubeApi.from_kubeconfig(str(server.kubeconfig(tmp_path / "kc", context="prod")))
        ident = api.identity()
    assert ident.cluster_uid == "uid-tls" and ident.context == "prod" and ident.server.startswith("https://")
    assert ident.ca_sha256 == hashlib.sha256(base64.b64decode(server_certs.ca_data)).hexdigest()


def test_the_plan_hash_survives_the_trip_through_json(tmp_path):
    import msgspec

    from kubegpu.defrag.identity import ClusterIdentity
    from kubegpu.defrag.journal import plan_hash
    from kubegpu.defrag.plan import Goal, Plan

    plan = Plan(goal=Goal(kind="size", size=4), feasible=True, message="already possible",
                total_cost_gpu_hours=0, before={"fits_by_size": {"1": 3, "2": 0}})  # an int where a float goes
    journal = Journal(tmp_path / "j")
    journal.start(plan, ClusterIdentity(server="https://x"))
    st = journal.state()
    assert st.plan_hash == plan_hash(plan) == plan_hash(st.plan)
    assert msgspec.to_builtins(st.plan)["total_cost_gpu_hours"] == 0.0


def test_a_journal_in_use_by_another_run_is_not_resumed(world):
    import fcntl

    from kubegpu.errors import UsageError

    w = world
    assert Executor(w.api, Journal(w.journal), options(max_moves=1)).apply(w.plan).status == "stopped"
    with open(w.journal, "rb") as other:  # another kubegpu process is running this journal
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        with pytest.raises(UsageError, match="in use by another kubegpu process"):
            Executor(w.api, Journal(w.journal), options()).resume()
    assert len(w.emulator.evictions) == 1
    assert Executor(w.api, Journal(w.journal), options()).resume().status == "finished"


def _valid_journal(path):
    from kubegpu.defrag.identity import ClusterIdentity
    from kubegpu.defrag.plan import Goal, Move, Plan

    plan = Plan(goal=Goal(kind="size", size=4), feasible=True, message="m", cordon=["n1"],
                moves=[Move(step=1, pod="ml/a", from_="n1", to="n2", uid="u1")])
    journal = Journal(path)
    journal.start(plan, ClusterIdentity(server="https://x"))
    journal.record("cordon-request", node="n1")
    return journal


def test_arbitrary_damage_is_either_read_or_refused_with_one_line(tmp_path):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    base = _valid_journal(tmp_path / "base.jsonl").path.read_bytes()

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(tail=st.binary(max_size=200), cut=st.integers(min_value=0, max_value=len(base)))
    def check(tail, cut):
        path = tmp_path / "j.jsonl"
        path.write_bytes(base[:cut] + tail)
        journal = Journal(path)
        try:
            journal.repair()
            state = journal.state()
        except InputError as err:
            assert "\n" not in str(err)
            return
        assert path.read_bytes() == b"" or path.read_bytes().endswith(b"\n")
        assert state.plan is None or state.plan.moves[0].uid == "u1"

    check()
