"""The pre-encoded replies decode to exactly what encoding the Go structs' fields would give."""

from __future__ import annotations

import json

import msgspec
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hs

from kubegpu.extender.wire import gather_filter_result, gather_host_priorities, host_records, name_catalogs

NAMES = hs.lists(hs.text(min_size=1, max_size=12), min_size=1, max_size=30, unique=True)


@settings(max_examples=60, deadline=None)
@given(names=NAMES, data=hs.data())
def test_gathered_filter_result_is_the_plain_encoding(names, data):
    n = len(names)
    texts = data.draw(hs.lists(hs.text(max_size=40), min_size=1, max_size=4))
    fate = np.asarray(data.draw(hs.lists(hs.integers(0, 2), min_size=n, max_size=n)))
    text = np.asarray(data.draw(hs.lists(hs.integers(0, len(texts) - 1), min_size=n, max_size=n)))
    keys, items = name_catalogs([msgspec.json.encode(x) for x in names])
    passed, soft, hard = (np.flatnonzero(fate == k) for k in range(3))
    body = gather_filter_result(keys, items, passed, soft, text[soft], hard, text[hard], texts)
    assert json.loads(body) == {
        "Nodes": None, "NodeNames": [names[i] for i in passed],
        "FailedNodes": {names[i]: texts[text[i]] for i in soft},
        "FailedAndUnresolvableNodes": {names[i]: texts[text[i]] for i in hard}, "Error": ""}


@settings(max_examples=60, deadline=None)
@given(names=NAMES, data=hs.data())
def test_gathered_host_priorities_are_the_plain_encoding(names, data):
    idx = np.asarray(data.draw(hs.lists(hs.integers(0, len(names) - 1), max_size=40)), dtype=np.int64)
    scores = np.asarray(data.draw(hs.lists(hs.integers(0, 10), min_size=len(idx), max_size=len(idx))), dtype=np.int64)
    body = gather_host_priorities(host_records([msgspec.json.encode(x) for x in names]), idx, scores)
    assert json.loads(body) == [{"Host": names[i], "Score": int(s)} for i, s in zip(idx, scores)]
