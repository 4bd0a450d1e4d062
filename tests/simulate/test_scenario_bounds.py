"""Scenario values checked precisely: the quantity wrapper, the work bounds at their edge, progress of a long run."""

from __future__ import annotations

import pytest

from kubegpu.errors import InputError
from kubegpu.simulate import limits, scenario_checks
from kubegpu.simulate.engine import Engine
from kubegpu.simulate.generators import build_jobs

from .scenario_helpers import burst, scenario


def test_the_quantity_wrapper_names_the_field_and_lets_bugs_through(monkeypatch):
    with pytest.raises(InputError, match="grammar") as err:
        scenario_checks.quantity("2 cores", where="s.yaml", field="pod.cpu")
    assert err.value.field == "pod.cpu"

    def broken(value):
        raise RuntimeError("a bug in the quantity parser")

    monkeypatch.setattr(scenario_checks, "parse_quantity", broken)
    with pytest.raises(RuntimeError):  # a bug is not turned into "not a Kubernetes quantity"
        scenario_checks.quantity("2", where="s.yaml", field="pod.cpu")


def test_bounds_are_inclusive_and_name_the_bound():
    assert scenario(**{"cluster__node_groups__gpu__max": limits.MAX_NODES}).spec  # exactly at the bound: fine
    with pytest.raises(InputError, match="50,000") as err:
        scenario(**{"cluster__node_groups__gpu__max": limits.MAX_NODES + 1})
    assert err.value.field == "cluster.node_groups"


def test_a_week_at_a_one_second_scan_interval_is_allowed():
    """Real users: week-long runs with a fast autoscaler are within the bounds."""
    sc = scenario(duration="168h", **{"autoscaler__scan-interval": "1s"})
    assert sc.autoscaler.scan_interval == 1.0


def test_a_long_run_reports_progress_in_simulated_time():
    sc = scenario(duration="24h", **{"workload__generators": [burst(replicas=4)]})
    seen: list[float] = []
    Engine(sc, build_jobs(sc)).run(on_progress=seen.append)
    assert len(seen) >= 10 and seen == sorted(seen) and seen[-1] <= sc.duration_s
    assert seen[-1] >= 0.9 * sc.duration_s
