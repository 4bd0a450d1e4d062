"""openb CSV loading: columns, values, and errors that name file, row and column."""

from pathlib import Path

import pytest

from kubegpu.errors import InputError
from kubegpu.simulate.trace import load_nodes, load_pods, trace_state

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "alibaba-gpu-v2023"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_pods_and_nodes_load(tmp_path):
    nodes = load_nodes(write(tmp_path, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
                                                "a,96000,393216,8,G2\nb,32000,131072,0,\n"))
    pods = load_pods(write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                                              "p0,12000,16384,1,460,V100M16|V100M32\np1,4000,1024,0,0,\n"
                                              "p2,8000,0,8,1000,\n"))
    assert nodes.total_gpus == 8 and nodes.models == ["G2", ""]
    assert pods[0].models == frozenset({"V100M16", "V100M32"}) and pods[0].mem_bytes == 16384 << 20
    assert pods[1].models is None and pods[2].total_gpu_milli == 8000
    state = trace_state(nodes)
    assert state.gpu_models == ["G2"] and state.gpu_model.tolist() == [0, -1]
    assert state.dev_total.tolist() == [[1000] * 8, [0] * 8]


def test_missing_column_is_named(tmp_path):
    path = write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu\np0,1,1,0\n")
    with pytest.raises(InputError) as err:
        load_pods(path)
    assert err.value.field == "gpu_milli" and str(path) in str(err.value)


@pytest.mark.parametrize("row, column", [
    ("p0,abc,1,0,0", "cpu_milli"),
    ("p0,1000,1,1,0", "gpu_milli"),
    ("p0,1000,1,1,1500", "gpu_milli"),
    ("p0,1000,1,2,500", "gpu_milli"),
    ("p0,1000,-5,0,0", "memory_mib"),
])
def test_bad_value_names_file_row_and_column(tmp_path, row, column):
    path = write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np-ok,1,1,0,0\n" + row + "\n")
    with pytest.raises(InputError) as err:
        load_pods(path)
    assert err.value.field == column
    assert err.value.where == f"{path}:3"


def test_bad_node_row(tmp_path):
    path = write(tmp_path, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\na,96000,1,x,G2\n")
    with pytest.raises(InputError) as err:
        load_nodes(path)
    assert err.value.where == f"{path}:2" and err.value.field == "gpu"


def test_unreadable_file(tmp_path):
    with pytest.raises(InputError):
        load_nodes(tmp_path / "absent.csv")


def test_shared_traces_load():
    if not SHARED.exists():
        pytest.skip("shared Alibaba trace not available beside the project")
    nodes = load_nodes(SHARED / "openb_node_list_gpu_node.csv")
    assert len(nodes.names) == 1213 and nodes.total_gpus == 6212
    pods = load_pods(SHARED / "openb_pod_list_default.csv")
    assert len(pods) == 8152
    assert sum(t.total_gpu_milli for t in pods) == pytest.approx(6_086_800, abs=100)
    spec = load_pods(SHARED / "openb_pod_list_gpuspec25.csv")
    assert any(t.models for t in spec)
