"""`kubegpu.modelcache.pull` against a real HTTP source on 127.0.0.1, onto real files."""

from __future__ import annotations

import os
import random

import pytest

from kubegpu.errors import InputError
from kubegpu.modelcache import store
from kubegpu.modelcache.pull import DiskSpaceRefused, PullFailed, pull
from kubegpu.modelcache.spec import decode_cache

from .source_server import SourceServer, cache_object


def payload(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


V1 = {"config.json": b'{"layers": 2}', "weights/part-1.bin": payload(300_000, 1)}
V2 = {"config.json": b'{"layers": 3}', "weights/part-1.bin": payload(400_000, 2),
      "weights/part-2.bin": payload(250_000, 3)}
FAST = {"retry": {"attempts": 4, "backoffSeconds": 0, "maxBackoffSeconds": 0}, "storage": {"headroom": "0"}}


def cache(version, files, url, **spec):
    return decode_cache(cache_object("llama", version, files, {"url": url}, **{**FAST, **spec}))


def assert_current(root, version, files):
    cur = root / "llama" / "current"
    assert os.readlink(cur) == version
    for path, data in files.items():
        assert (cur / path).read_bytes() == data


def test_pull_writes_verified_version_and_points_current_at_it(tmp_path):
    with SourceServer(V1) as src:
        result = pull(cache("v1", V1, src.url), tmp_path)
    assert result.switched and result.bytes_fetched == sum(map(len, V1.values()))
    assert_current(tmp_path, "v1", V1)
    assert store.is_verified(tmp_path / "llama" / "v1", cache("v1", V1, src.url))
    assert sorted(p.name for p in (tmp_path / "llama").iterdir()) == ["current", "v1"]


def test_second_pull_of_same_version_fetches_nothing(tmp_path):
    with SourceServer(V1) as src:
        pull(cache("v1", V1, src.url), tmp_path)
        src.log.clear()
        result = pull(cache("v1", V1, src.url), tmp_path)
    assert src.log == [] and not result.switched and result.bytes_fetched == 0


def test_connection_resets_resume_with_range_requests(tmp_path):
    with SourceServer(V1) as src:
        src.resets["weights/part-1.bin"] = (100_000, 2)
        pull(cache("v1", V1, src.url), tmp_path)
        ranges = src.ranges("weights/part-1.bin")
    assert_current(tmp_path, "v1", V1)
    assert ranges[0] is None and len(ranges) == 3
    assert all(r and r.startswith("bytes=") and int(r[6:-1]) > 0 for r in ranges[1:])


def test_server_that_ignores_range_restarts_file_from_zero(tmp_path):
    with SourceServer(V1) as src:
        src.resets["weights/part-1.bin"] = (100_000, 1)
        src.ignore_range = True
        pull(cache("v1", V1, src.url), tmp_path)
    assert_current(tmp_path, "v1", V1)


def test_wrong_bytes_once_are_refetched_and_never_switched_to(tmp_path):
    with SourceServer(V1) as src:
        src.wrong["weights/part-1.bin"] = 1
        pull(cache("v1", V1, src.url), tmp_path)
        assert len(src.ranges("weights/part-1.bin")) == 2
    assert_current(tmp_path, "v1", V1)


def test_update_keeps_old_version_until_new_one_verifies_then_switches(tmp_path):
    with SourceServer({**V1}) as src1:
        pull(cache("v1", V1, src1.url), tmp_path)
    with SourceServer(V2) as src2:
        src2.missing.add("weights/part-2.bin")  # 404 mid-way through the version
        with pytest.raises(PullFailed, match="404"):
            pull(cache("v2", V2, src2.url), tmp_path)
        assert_current(tmp_path, "v1", V1)
        assert (tmp_path / "llama" / ".v2.staging" / "weights" / "part-1.bin").is_file()  # kept to resume
        src2.missing.clear()
        src2.log.clear()
        result = pull(cache("v2", V2, src2.url), tmp_path)
        assert "weights/part-1.bin" not in [p for p, _, _ in src2.log]  # verified file not fetched again
    assert_current(tmp_path, "v2", V2)
    assert result.previous == "v1" and result.removed == []  # offline: the replaced version stays
    assert (tmp_path / "llama" / "v1" / "config.json").read_bytes() == V1["config.json"]


def test_gc_removes_versions_no_pod_uses(tmp_path):
    with SourceServer(V1) as s:
        pull(cache("v1", V1, s.url), tmp_path)
    with SourceServer(V2) as s:
        result = pull(cache("v2", V2, s.url), tmp_path, in_use=set())
    assert result.removed == ["v1"] and store.versions_on_disk(tmp_path, "llama") == ["v2"]


def test_gc_keeps_a_version_a_pod_still_uses(tmp_path):
    with SourceServer(V1) as s:
        pull(cache("v1", V1, s.url), tmp_path)
    with SourceServer(V2) as s:
        result = pull(cache("v2", V2, s.url), tmp_path, in_use={"v1"})
    assert result.removed == [] and store.versions_on_disk(tmp_path, "llama") == ["v1", "v2"]


def test_persistent_digest_mismatch_is_input_error_naming_the_field(tmp_path):
    lying = {**V1, "config.json": b'{"layers": 9}'}
    with SourceServer(lying) as src:
        with pytest.raises(InputError) as err:
            pull(cache("v1", V1, src.url), tmp_path)
    assert "ModelCache/llama" in str(err.value) and "spec.files[0].sha256" in str(err.value)
    assert store.current_version(tmp_path, "llama") is None


def test_size_that_lies_is_input_error(tmp_path):
    with SourceServer(V1) as src:
        src.extra["config.json"] = b"xx"
        with pytest.raises(InputError, match=r"spec.files\[0\].size"):
            pull(cache("v1", V1, src.url), tmp_path)


def test_redirect_to_another_host_is_refused(tmp_path):
    with SourceServer(V1) as src:
        src.redirects["config.json"] = "http://localhost:1/elsewhere/config.json"
        with pytest.raises(InputError, match="redirects to another host"):
            pull(cache("v1", V1, src.url), tmp_path)


def test_redirect_on_same_host_is_followed(tmp_path):
    with SourceServer({**V1, "real/config.json": V1["config.json"]}) as src:
        src.redirects["config.json"] = src.url + "real/config.json"
        pull(cache("v1", V1, src.url), tmp_path)
    assert_current(tmp_path, "v1", V1)


def test_source_down_gives_up_after_retry_cap_with_backoff(tmp_path):
    sleeps = []
    spec = cache_object("llama", "v1", V1, {"url": "http://127.0.0.1:9/models/"},
                        retry={"attempts": 4, "backoffSeconds": 1, "maxBackoffSeconds": 3},
                        storage={"headroom": "0"})
    with pytest.raises(PullFailed, match="after 4 attempts"):
        pull(decode_cache(spec), tmp_path, sleep=sleeps.append)
    assert sleeps == [1, 2, 3]  # exponential, capped


def test_disk_guard_refuses_and_cleans_up(tmp_path):
    with SourceServer(V2) as src:
        c = cache("v2", V2, src.url, storage={"headroom": "1Mi"})
        staging = store.staging_dir(tmp_path, "llama", "v2")
        staging.mkdir(parents=True)
        (staging / "config.json.partial").write_bytes(b"{")
        with pytest.raises(DiskSpaceRefused, match="headroom"):
            pull(c, tmp_path, free_space=lambda p: 1024**2 + 500_000)
        assert not staging.exists() and src.log == []
        pull(c, tmp_path, free_space=lambda p: 1024**2 + 700_000)  # room for 650,013 bytes + headroom
    assert_current(tmp_path, "v2", V2)


def test_storage_limit_counts_the_old_version_that_must_stay(tmp_path):
    with SourceServer(V1) as s:
        pull(cache("v1", V1, s.url), tmp_path)
    with SourceServer(V2) as s:
        with pytest.raises(DiskSpaceRefused, match="storage limit"):
            pull(cache("v2", V2, s.url, storage={"headroom": "0", "limit": "900k"}), tmp_path)
    assert_current(tmp_path, "v1", V1)


def test_path_source_copies_from_mounted_folder(tmp_path):
    shared = tmp_path / "nfs"
    for path, data in V1.items():
        (shared / path).parent.mkdir(parents=True, exist_ok=True)
        (shared / path).write_bytes(data)
    c = decode_cache(cache_object("llama", "v1", V1, {"path": str(shared)}, **FAST))
    pull(c, tmp_path / "root")
    assert_current(tmp_path / "root", "v1", V1)


def test_throttle_sleeps_for_the_bandwidth_cap(tmp_path):
    sleeps = []
    with SourceServer(V1) as src:
        pull(cache("v1", V1, src.url), tmp_path, rate=100_000.0, sleep=sleeps.append)
    assert sum(sleeps) > 2.0  # ~300 kB at 100 kB/s, one second of burst allowed


def test_s3_compatible_source_is_read_path_style(tmp_path):
    with SourceServer(V1, prefix="/bucket-a/llama/rev1/") as src:
        endpoint = src.url.split("/bucket-a/")[0]
        c = decode_cache(cache_object("llama", "v1", V1, {"s3": {"endpoint": endpoint, "bucket": "bucket-a",
                                                                 "prefix": "/llama/rev1/"}}, **FAST))
        pull(c, tmp_path)
        assert {p for p, _, _ in src.log} == set(V1)
    assert_current(tmp_path, "v1", V1)


def test_changed_manifest_under_the_current_version_name_is_refused(tmp_path):
    with SourceServer(V1) as src:
        pull(cache("v1", V1, src.url), tmp_path)
        src.files = dict(V2)
        src.log.clear()
        with pytest.raises(InputError, match="spec.version"):
            pull(cache("v1", V2, src.url), tmp_path)
        assert src.log == []
    assert_current(tmp_path, "v1", V1)
