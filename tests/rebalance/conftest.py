"""Rebalance tests build their clusters with the defrag builders and the live world in this folder."""

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).parent
for folder in (_HERE, _HERE.parent / "defrag"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


@pytest.fixture
def live(tmp_path):
    """A live test cluster (liveworld.start_live_world), stopped after the test."""
    from liveworld import start_live_world

    world = start_live_world(tmp_path)
    try:
        yield world
    finally:
        world.server.stop()
