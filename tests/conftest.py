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


@pytest.fixture(scope="session")
def demo_store():
    """The pitfalls demo in a ModelStore, as `kubegpu serve --demo` holds it (web and hostile tests)."""
    from kubegpu.cli.options import SourceOptions, load_prices, load_state
    from kubegpu.web.store import ModelStore

    source = SourceOptions(demo="pitfalls", snapshots=(), kubeconfig=None, context=None, namespace=None,
                           all_namespaces=False, k8s_version=None)
    store = ModelStore(prices=load_prices(source))   # the demo's article price, as the CLI uses
    store.install(load_state(source))
    return store


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


# ---------------------------------------------------------------------------------------------------
# Test lanes. Markers (registered in pyproject.toml) are applied here from what a test uses, so a new
# test lands in the right lane without remembering to mark it:
#   browser    - drives Chromium through Playwright
#   live       - starts the test Kubernetes API server (tests/apiserver) or talks to it
#   subprocess - spawns the real CLI or another process
#   slow       - any of the above, or a module listed in SLOW_MODULES (measured: several seconds each)
# The inner loop is `python3 -m pytest -m "not slow"`; `python3 -m pytest` (and .ci/run) runs everything.
LIVE_FIXTURES = frozenset({"apiserver", "tls_apiserver", "live_server", "eviction_server"})
SLOW_MODULES = frozenset({
    "hostile/test_fuzz.py", "hostile/test_outputs.py", "hostile/test_inputs.py", "hostile/test_signals.py",
    "defrag/test_crash.py", "simulate/test_sweep.py", "simulate/test_inflation.py", "simulate/test_reference_oracle.py",
    "simulate/test_scenarios.py", "simulate/test_trace.py", "scheduling/test_volume_matching.py",
    "defrag/test_journal.py", "web/test_prometheus.py", "web/test_helm.py", "fragmentation/test_shapes.py",
    "money/test_cli_money.py",
})
_TEXT: dict[str, str] = {}


def _module_text(path: Path) -> str:
    key = str(path)
    if key not in _TEXT:
        _TEXT[key] = path.read_text(errors="replace")
    return _TEXT[key]


def pytest_collection_modifyitems(config, items):
    root = Path(__file__).parent
    for item in items:
        path = Path(str(item.path))
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        text = _module_text(path) if path.suffix == ".py" else ""
        lanes = set()
        if "playwright" in text:
            lanes.add("browser")
        if LIVE_FIXTURES & set(item.fixturenames) or "FakeApiServer" in text or "apiserver" in text:
            lanes.add("live")
        if "run_kubegpu" in item.fixturenames or "subprocess" in text or "Popen" in text or rel.startswith(
                ("face/", "hostile/", "cli/")):
            lanes.add("subprocess")
        if lanes or rel in SLOW_MODULES:
            lanes.add("slow")
        for lane in sorted(lanes):
            item.add_marker(getattr(pytest.mark, lane))
