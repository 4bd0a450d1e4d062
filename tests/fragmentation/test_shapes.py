"""Task-shape mixes: the 95 % coverage rule and the two file formats."""

import json

import pytest

from kubegpu.errors import InputError
from kubegpu.fragmentation.shapes import ShapeMix, TaskShape, load_mix, mix_from_tasks, mix_to_json
from kubegpu.placement.task import Task


def tasks(spec: dict[tuple[int, int, int], int]) -> list[Task]:
    return [Task(cpu_milli=c, num_gpu=k, gpu_milli=g) for (c, k, g), n in spec.items() for _ in range(n)]


def test_most_popular_shapes_until_coverage_then_renormalised():
    mix = mix_from_tasks(tasks({(1000, 1, 1000): 60, (2000, 1, 500): 30, (4000, 0, 0): 6, (8000, 8, 1000): 4}))
    # 60 + 30 = 90 % < 95 %, add the third (96 %), stop
    assert [(s.cpu_milli, s.num_gpu, s.gpu_milli) for s in mix.shapes] == [(1000, 1, 1000), (2000, 1, 500),
                                                                             (4000, 0, 0)]
    assert mix.weight.tolist() == pytest.approx([60 / 96, 30 / 96, 6 / 96])


def test_cpu_only_pods_are_part_of_the_mix_and_ties_are_order_independent():
    a = mix_from_tasks(tasks({(1000, 0, 0): 5, (2000, 1, 300): 5}), coverage=1.0)
    b = mix_from_tasks(list(reversed(tasks({(1000, 0, 0): 5, (2000, 1, 300): 5}))), coverage=1.0)
    assert [s.cpu_milli for s in a.shapes] == [s.cpu_milli for s in b.shapes] == [2000, 1000]


def test_json_mix_round_trip(tmp_path):
    path = tmp_path / "mix.json"
    path.write_text(json.dumps([{"cpu_milli": 4000, "num_gpu": 1, "gpu_milli": 1000, "weight": 3},
                                {"cpu_milli": 2000, "num_gpu": 1, "gpu_milli": 250, "gpu_model": "T4|A10",
                                 "weight": 1}]))
    mix = load_mix(path)
    assert mix.weight.tolist() == [0.75, 0.25] and mix.shapes[1].models == frozenset({"T4", "A10"})
    again = tmp_path / "again.json"
    again.write_text(mix_to_json(mix))
    assert load_mix(again).weight.tolist() == [0.75, 0.25]


def test_csv_mix_uses_the_openb_pod_list(tmp_path):
    path = tmp_path / "pods.csv"
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                    + "".join(f"p{i},4000,1024,1,1000,\n" for i in range(9)) + "q,1000,10,0,0,\n")
    mix = load_mix(path)
    assert len(mix) == 2 and mix.shapes[0].num_gpu == 1 and mix.shapes[0].mem_bytes == 1024 << 20


@pytest.mark.parametrize("content", ['{"cpu_milli": 1}', '[{"cpu_milli": 1, "num_gpu": 1}]',
                                     '[{"cpu_milli": 1, "bogus": 2}]', '[]', 'not json'])
def test_bad_json_mix_is_an_input_error(tmp_path, content):
    path = tmp_path / "mix.json"
    path.write_text(content)
    with pytest.raises(InputError):
        load_mix(path)


def test_access_table_respects_models():
    mix = ShapeMix([TaskShape(cpu_milli=0, num_gpu=1, gpu_milli=100, models=frozenset({"T4"})),
                    TaskShape(cpu_milli=0, num_gpu=1, gpu_milli=100)])
    table = mix.access_table(["A100", "T4"])
    assert table.tolist() == [[False, True], [True, True], [False, True]]
