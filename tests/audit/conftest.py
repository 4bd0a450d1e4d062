"""Session fixtures of the audit tests."""

from __future__ import annotations

import pytest
from .audit_support import demo_state


@pytest.fixture(scope="session")
def demo_states():
    """{'pitfalls': state, 'clean': state} of the embedded demo (built once per session)."""
    return {variant: demo_state(variant) for variant in ("pitfalls", "clean")}
