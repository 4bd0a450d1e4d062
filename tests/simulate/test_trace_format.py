"""Job traces: kubegpu's CSV/JSON format and the Alibaba openb pod lists with their timestamps."""

import json
from pathlib import Path

import msgspec
import pytest

from kubegpu.errors import InputError
from kubegpu.simulate.trace_format import load_trace
from kubegpu.simulate.workload import PriorityClass

CLASSES = {"high": PriorityClass("high", 1000)}
OPENB = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "alibaba-gpu-v2023" / "openb_pod_list_default.csv"


def test_csv_trace_with_gangs_work_and_selectors(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("name,submit,duration,work_gpu_seconds,gpus,pods,priority_class,node_selector,tolerations,"
                 "checkpoint_interval\n"
                 "a,90m,2h,,8,2,high,pool=gpu,nvidia.com/gpu:NoSchedule,30m\n"
                 "b,0,,7200,4,1,,,,\n")
    jobs = load_trace(f, classes=CLASSES)
    assert [j.name for j in jobs] == ["b", "a"]
    b, a = jobs
    assert b.work == 1800 and b.task.num_gpu == 4
    assert a.submit == 5400 and a.work == 7200 and a.pods == 2 and a.priority.value == 1000
    assert a.selector.node_selector == (("pool", "gpu"),) and a.checkpoint_interval == 1800


def test_json_trace(tmp_path):
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"jobs": [{"submit": 10, "duration": "1h", "gpus": 1, "gpu_milli": 500}]}))
    (job,) = load_trace(f, classes={})
    assert job.task.gpu_milli == 500 and job.work == 3600


@pytest.mark.parametrize("row, field", [("x,-5,1h,1", "submit"), ("x,0,1h,1,extra", None), ("x,0,soon,1", "duration"),
                                        ("x,0,1h,-1", "gpus")])
def test_bad_trace_rows_name_the_row_and_column(tmp_path, row, field):
    f = tmp_path / "t.csv"
    f.write_text("name,submit,duration,gpus\n" + row + "\n")
    with pytest.raises(InputError) as err:
        load_trace(f, classes={})
    assert f"{f}:2" in str(err.value)
    if field:
        assert field in str(err.value)


def test_openb_pod_list_times_become_submissions_and_durations():
    if not OPENB.is_file():
        pytest.skip("the shared Alibaba trace is not next to the project")
    jobs = load_trace(OPENB, classes={})
    assert len(jobs) == 8152 and jobs[0].submit == 0
    assert all(j.work >= 1 for j in jobs)
    first = next(j for j in jobs if j.name == "openb-pod-0001")
    assert first.submit == 427061 and first.work == 12902960 - 427061


OPENB_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,scheduled_time,deletion_time\n"


@pytest.mark.parametrize("row, says", [("p,1000,1024,2,500,,0,0,10", "must take whole GPUs"),
                                       ("p,1000,1024,0,500,,0,0,10", "both must be 0 or both set"),
                                       ("p,x,1024,1,500,,0,0,10", "cpu_milli")])
def test_openb_trace_rows_are_read_as_pod_lists_read_them(tmp_path, row, says):
    """The pod columns of an openb trace go through the pod-list reader (fragmentation/podlist.pod_task)."""
    from kubegpu.fragmentation.podlist import load_pod_list

    f = tmp_path / "openb.csv"
    f.write_text(OPENB_HEADER + row + "\n")
    with pytest.raises(InputError) as trace_err:
        load_trace(f, classes={})
    with pytest.raises(InputError) as list_err:
        load_pod_list(f)
    assert str(trace_err.value) == str(list_err.value) and f"{f}:2" in str(trace_err.value)
    assert says in str(trace_err.value)


def test_openb_trace_task_is_the_pod_list_task(tmp_path):
    from kubegpu.fragmentation.podlist import load_pod_list

    f = tmp_path / "openb.csv"
    f.write_text(OPENB_HEADER + "a,8000,16384,1,460,V100M16|G2,5,7,100\nb,2000,1024.0,0,0,,0,,50\n")
    jobs = {j.name: j for j in load_trace(f, classes={})}
    tasks = {t.name: t for t in load_pod_list(f)}
    for name in ("a", "b"):
        assert jobs[name].task == msgspec.structs.replace(tasks[name], name="")
    assert jobs["a"].task.models == frozenset({"V100M16", "G2"}) and jobs["a"].submit == 5 and jobs["a"].work == 93
