"""Credential plugins that misbehave and API servers that trickle: one line, bounded time."""

from __future__ import annotations

import socket
import stat
import sys
import threading
import time

import pytest

from kubegpu.errors import SourceError
from kubegpu.sources import kubeconfig as kc
from kubegpu.sources.live import read_live

from .test_kubeconfig import write_config

EXEC = "client.authentication.k8s.io/v1"


def plugin(folder, body: str):
    script = folder / "bad-login"
    script.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@pytest.mark.parametrize("body, says", [
    ("print('Please open https://login.example in a browser')", "printed no ExecCredential with status.token"),
    ("print('{\"status\": {\"token\": 42}}')", "status.token is not a usable token"),
    ("sys.stderr.write('token expired\\nrun login\\n'); sys.exit(3)", "exited with status 3: token expired"),
    ("time.sleep(60)", "did not answer within 0.5 s"),
])
def test_a_misbehaving_plugin_is_one_error_naming_user_and_plugin(clean_env, tmp_path, apiserver, monkeypatch,
                                                                  body, says):
    monkeypatch.setattr(kc, "EXEC_TIMEOUT", 0.5)
    script = plugin(tmp_path, body)
    f = write_config(tmp_path / "kc.yaml", clusters=[("c", {"server": apiserver.url})],
                     users=[("alice", {"exec": {"apiVersion": EXEC, "command": str(script)}})],
                     contexts=[("ctx", {"cluster": "c", "user": "alice"})], current="ctx")
    started = time.monotonic()
    with pytest.raises(SourceError) as info:
        read_live(kubeconfig=str(f), context=None)
    assert time.monotonic() - started < 30  # bounded, not a hang
    text = str(info.value)
    assert f"credential plugin {script} for user 'alice' (context ctx)" in text and says in text
    assert "\n" not in text


def trickling_server(stop: threading.Event) -> int:
    """An HTTP server that answers every request one byte per 0.2 s, for ever."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)

    def serve():
        conns = []
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                conns.append(conn)
                conn.recv(65536)
                threading.Thread(target=drip, args=(conn,), daemon=True).start()
            except OSError:
                continue
        srv.close()

    def drip(conn):
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
        try:
            for b in head:
                conn.sendall(bytes([b]))
            while not stop.is_set():
                conn.sendall(b" ")
                time.sleep(0.2)
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


def test_an_api_server_that_trickles_hits_the_total_time_bound(clean_env, tmp_path, monkeypatch):
    stop = threading.Event()
    port = trickling_server(stop)
    monkeypatch.setenv("KUBEGPU_TIMEOUT", "2")
    f = write_config(tmp_path / "kc.yaml", clusters=[("c", {"server": f"http://127.0.0.1:{port}"})],
                     users=[("u", {"token": "t"})], contexts=[("ctx", {"cluster": "c", "user": "u"})], current="ctx")
    started = time.monotonic()
    try:
        with pytest.raises(SourceError, match="within 2 s"):
            read_live(kubeconfig=str(f), context=None)
    finally:
        stop.set()
    assert time.monotonic() - started < 20
