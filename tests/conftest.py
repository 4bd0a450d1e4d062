"""Shared pytest fixtures: the test Kubernetes API server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# tests/ holds the `apiserver` helper package; make it importable whatever pytest's import mode
_TESTS = str(Path(__file__).parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from apiserver.server import FakeApiServer  # noqa: E402


@pytest.fixture
def apiserver():
    """A fresh API server on 127.0.0.1 (plain HTTP, token `test-token`), stopped after the test."""
    with FakeApiServer() as server:
        yield server


@pytest.fixture(scope="session")
def server_certs(tmp_path_factory):
    """A CA and a 127.0.0.1 server certificate (made once per session)."""
    from apiserver.certs import make_server_certs

    return make_server_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def tls_apiserver(server_certs):
    """The API server over https, with a certificate its kubeconfig() trusts."""
    with FakeApiServer(certs=server_certs) as server:
        yield server


@pytest.fixture
def run_kubegpu():
    """Run the real CLI in a subprocess: run_kubegpu(*args, env=None, input=None) -> CompletedProcess."""
    import os
    import subprocess

    src = str(Path(__file__).resolve().parents[1] / "src")

    def run(*args: str, env: dict | None = None, input: str | None = None, timeout: float = 120):
        full_env = dict(os.environ if env is None else env)
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in (src, full_env.get("PYTHONPATH")) if p)
        return subprocess.run([sys.executable, "-m", "kubegpu.cli.main", *args], capture_output=True, text=True,
                              env=full_env, input=input, timeout=timeout)

    return run
