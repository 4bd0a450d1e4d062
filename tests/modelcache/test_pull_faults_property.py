"""Invariant: whatever the source does, `current` is always a fully verified version."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubegpu.errors import InputError
from kubegpu.modelcache import store
from kubegpu.modelcache.pull import PullFailed, pull
from kubegpu.modelcache.spec import decode_cache

from .source_server import SourceServer, cache_object
from .test_pull import V1, V2

RETRY = {"retry": {"attempts": 3, "backoffSeconds": 0, "maxBackoffSeconds": 0}, "storage": {"headroom": "0"}}
faults = st.fixed_dictionaries({
    "resets": st.dictionaries(st.sampled_from(sorted(V2)), st.tuples(st.integers(0, 400_000), st.integers(0, 4))),
    "wrong": st.dictionaries(st.sampled_from(sorted(V2)), st.integers(0, 4)),
    "missing": st.sets(st.sampled_from(sorted(V2)), max_size=1),
    "ignore_range": st.booleans(),
})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faults)
def test_current_is_always_a_verified_version(plan):
    with tempfile.TemporaryDirectory() as tmp, SourceServer(V1) as src:
        root = Path(tmp)
        pull(decode_cache(cache_object("llama", "v1", V1, {"url": src.url}, **RETRY)), root)
        src.files = dict(V2)
        src.resets.update(plan["resets"])
        src.wrong.update(plan["wrong"])
        src.missing |= plan["missing"]
        src.ignore_range = plan["ignore_range"]
        try:
            pull(decode_cache(cache_object("llama", "v2", V2, {"url": src.url}, **RETRY)), root)
            expected = V2
        except (PullFailed, InputError):
            expected = V1
            assert plan["missing"] or plan["wrong"] or plan["resets"]
        cur = root / "llama" / "current"
        for path, data in expected.items():
            assert (cur / path).read_bytes() == data
        assert (root / "llama" / "v1" / "config.json").read_bytes() == V1["config.json"]  # never deleted offline
        assert store.is_verified(cur.resolve(), decode_cache(cache_object(
            "llama", "v2" if expected is V2 else "v1", expected, {"url": src.url}, **RETRY)))
