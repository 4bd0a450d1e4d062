"""Fixtures of the source tests: a machine with nothing configured."""

import pytest

from kubegpu.sources import kubeconfig as kc


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No KUBECONFIG, an empty HOME, and no service account: nothing configured."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(kc, "SERVICE_ACCOUNT_DIR", str(tmp_path / "no-service-account"))
    return home
