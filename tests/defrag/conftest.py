"""Defrag tests import their cluster builders from this folder."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


import pytest  # noqa: E402


@pytest.fixture
def world(tmp_path):
    """A live test cluster with a planned defrag (livecluster.start_world), stopped after the test."""
    from livecluster import start_world

    server, w = start_world(tmp_path)
    try:
        yield w
    finally:
        server.stop()
