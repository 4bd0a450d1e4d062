"""Hostile model roots, manifests and servers for `kubegpu models pull` (the agent runs as root on a hostPath).

Links planted where the puller stages or keeps files must never be followed (nothing outside the
root changes), and "verified" must mean that every byte of every file hashed to the manifest's
digest, whatever was already in the staging or version folders.
"""

from __future__ import annotations

import os
import socket
import threading

import pytest
import yaml

from kubegpu.modelcache import store
from kubegpu.modelcache.pull import PullFailed, pull
from kubegpu.modelcache.spec import decode_cache
from modelcache.source_server import SourceServer, cache_object

from inprocess import run_inprocess

FILES = {"config.json": b'{"layers": 2}', "weights/part-1.bin": bytes(range(256)) * 400}
FAST = {"retry": {"attempts": 2, "backoffSeconds": 0, "maxBackoffSeconds": 0}, "storage": {"headroom": "0"}}


def cache(url, version="v1", files=FILES):
    return decode_cache(cache_object("llama", version, files, {"url": url}, **FAST))


@pytest.fixture
def victim(tmp_path):
    """A file and a folder outside the root that a planted link points at."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_bytes(b"root:x:0:0::/root:/bin/sh\n")
    return outside


def untouched(outside):
    assert (outside / "passwd").read_bytes() == b"root:x:0:0::/root:/bin/sh\n"
    assert sorted(p.name for p in outside.iterdir()) == ["passwd"]


def assert_verified(root, files=FILES, version="v1"):
    cur = root / "llama" / "current"
    assert os.readlink(cur) == version
    assert not (root / "llama" / version).is_symlink()
    for path, data in files.items():
        assert not (root / "llama" / version / path).is_symlink()
        assert (root / "llama" / version / path).read_bytes() == data


def test_planted_partial_link_is_never_followed(tmp_path, victim):
    root = tmp_path / "root"
    staging = store.staging_dir(root, "llama", "v1")
    staging.mkdir(parents=True)
    (staging / "config.json.partial").symlink_to(victim / "passwd")
    with SourceServer(FILES) as src:
        pull(cache(src.url), root)
    untouched(victim)
    assert_verified(root)


def test_planted_staging_folder_link_is_never_followed(tmp_path, victim):
    root = tmp_path / "root"
    (root / "llama").mkdir(parents=True)
    store.staging_dir(root, "llama", "v1").symlink_to(victim, target_is_directory=True)
    with SourceServer(FILES) as src:
        pull(cache(src.url), root)
    untouched(victim)
    assert_verified(root)


def test_planted_link_as_a_subfolder_of_staging_is_never_followed(tmp_path, victim):
    root = tmp_path / "root"
    staging = store.staging_dir(root, "llama", "v1")
    staging.mkdir(parents=True)
    (staging / "weights").symlink_to(victim, target_is_directory=True)
    with SourceServer(FILES) as src:
        pull(cache(src.url), root)
    untouched(victim)
    assert_verified(root)


def test_model_folder_that_is_a_link_is_refused_in_one_line(tmp_path, victim):
    root = tmp_path / "root"
    root.mkdir()
    (root / "llama").symlink_to(victim, target_is_directory=True)
    with SourceServer(FILES) as src:
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(cache_object("llama", "v1", FILES, {"url": src.url}, **FAST)))
        result = run_inprocess("models", "pull", "--cache", str(path), "--root", str(root))
    assert result.code == 1 and len(result.err_lines) == 1, result.stderr
    assert "never follows a link" in result.stderr and str(root / "llama") in result.stderr
    untouched(victim)


def test_fifo_as_partial_is_replaced_not_read(tmp_path):
    root = tmp_path / "root"
    staging = store.staging_dir(root, "llama", "v1")
    (staging / "weights").mkdir(parents=True)
    os.mkfifo(staging / "weights" / "part-1.bin.partial")
    with SourceServer(FILES) as src:
        pull(cache(src.url), root)  # would block for ever opening the FIFO
    assert_verified(root)


@pytest.mark.parametrize("damage", ["zeros", "truncated", "link"])
def test_staged_file_counts_only_if_its_bytes_hash_to_the_digest(tmp_path, victim, damage):
    root = tmp_path / "root"
    staging = store.staging_dir(root, "llama", "v1")
    (staging / "weights").mkdir(parents=True)
    target = staging / "weights" / "part-1.bin"
    if damage == "zeros":
        target.write_bytes(bytes(len(FILES["weights/part-1.bin"])))
    elif damage == "truncated":
        target.write_bytes(FILES["weights/part-1.bin"][:1000])
    else:
        (victim / "copy").write_bytes(FILES["weights/part-1.bin"])
        target.symlink_to(victim / "copy")
    with SourceServer(FILES) as src:
        result = pull(cache(src.url), root)
        assert src.ranges("weights/part-1.bin"), "the damaged staged file was not fetched again"
    assert result.bytes_fetched >= len(FILES["weights/part-1.bin"])
    assert_verified(root)


@pytest.mark.parametrize("damage", ["zeros", "truncated", "link"])
def test_version_folder_with_a_copied_marker_is_not_reported_verified(tmp_path, victim, damage):
    root = tmp_path / "root"
    with SourceServer(FILES) as src:
        c = cache(src.url)
        pull(c, root)
        part = root / "llama" / "v1" / "weights" / "part-1.bin"
        if damage == "zeros":
            part.write_bytes(bytes(part.stat().st_size))
        elif damage == "truncated":
            part.write_bytes(part.read_bytes()[:10])
        else:
            (victim / "copy").write_bytes(part.read_bytes())
            part.unlink()
            part.symlink_to(victim / "copy")
        assert not store.is_verified(root / "llama" / "v1", c)
        src.log.clear()
        pull(c, root)
        assert src.ranges("weights/part-1.bin"), "a damaged version was reported verified without fetching"
    assert_verified(root)
    assert (victim / "copy").exists() or damage != "link"


def test_version_folder_that_is_a_link_to_a_verified_copy_is_not_trusted(tmp_path, victim):
    elsewhere = tmp_path / "elsewhere"
    with SourceServer(FILES) as src:
        c = cache(src.url)
        pull(c, elsewhere)
        root = tmp_path / "root"
        (root / "llama").mkdir(parents=True)
        (root / "llama" / "v1").symlink_to(elsewhere / "llama" / "v1", target_is_directory=True)
        assert not store.is_verified(root / "llama" / "v1", c)
        pull(c, root)
    assert_verified(root)
    assert_verified(elsewhere)  # the link was removed, its target left alone


def _http09_server():
    """A server that answers every request with bare bytes, no status line (HTTP/0.9), over many lines."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)

    def serve():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(b"".join(b"line %d of an HTTP/0.9 answer\n" % i for i in range(16)))

    threading.Thread(target=serve, daemon=True).start()
    return sock


def test_http09_server_is_one_line_of_stderr(tmp_path):
    sock = _http09_server()
    try:
        obj = cache_object("llama", "v1", FILES, {"url": f"http://127.0.0.1:{sock.getsockname()[1]}/m/"}, **FAST)
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(obj))
        result = run_inprocess("models", "pull", "--cache", str(path), "--root", str(tmp_path / "root"))
    finally:
        sock.close()
    assert result.code == 1 and len(result.err_lines) == 1, result.stderr
    assert "not HTTP/1.x" in result.stderr


def test_source_that_stops_listening_mid_run_is_exit_1_in_one_line(tmp_path):
    with SourceServer(FILES) as src:
        c = cache(src.url)
        src.resets["weights/part-1.bin"] = (50_000, 1)
    with pytest.raises(PullFailed, match="gave up after 2 attempts"):  # the server is gone: refused
        pull(c, tmp_path / "root")
    assert store.current_version(tmp_path / "root", "llama") is None


def test_api_refusing_connections_for_pull_node_is_one_line(tmp_path):
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cache_object("llama", "v1", FILES, {"url": "http://127.0.0.1:9/"}, **FAST)))
    result = run_inprocess("models", "pull", "--cache", str(path), "--root", str(tmp_path / "root"),
                           "--node", "n1", "--kubeconfig", str(kubeconfig))
    assert result.code == 2 and len(result.err_lines) == 1, result.stderr
    assert "connection refused" in result.stderr
