"""Small pure helpers: namespace scope of object references, counted nouns, column fitting."""

from hypothesis import given
from hypothesis import strategies as st

from kubegpu.cli.columns import Col, fit_columns, needed_width
from kubegpu.model.namespaces import NamespaceScope, ref_namespace, ref_scope
from kubegpu.model.text import counted


def test_refs_of_namespaced_and_cluster_scoped_objects():
    assert ref_namespace("Pod/ml/trainer-0") == "ml" and ref_scope("Pod/ml/trainer-0") == "namespace"
    assert ref_namespace("Node/gpu-1") == "" and ref_scope("Node/gpu-1") == "cluster"
    assert ref_scope("Cluster/cluster") == "cluster"
    scope = NamespaceScope("ml")
    assert scope.includes_ref("Pod/ml/a") and not scope.includes_ref("Pod/other/a")
    assert scope.includes_ref("StorageClass/local-nvme")          # cluster-scoped stays
    assert NamespaceScope().includes_ref("Pod/other/a")           # all namespaces


def test_counted_nouns():
    assert counted(1, "GPU") == "1 GPU" and counted(2, "GPU") == "2 GPUs" and counted(0, "pod") == "0 pods"
    assert counted(0.5, "GPU") == "0.5 GPUs" and counted(3, "replica") == "3 replicas"


words = st.text(alphabet="abcdefghij-/", min_size=1, max_size=12)


@given(st.lists(st.lists(words, min_size=3, max_size=3), min_size=1, max_size=6),
       st.integers(min_value=20, max_value=120))
def test_dropping_columns_keeps_the_mandatory_ones_and_fits_when_it_can(rows, width):
    cols = [Col("NAME"), Col("EXTRA", drop=2), Col("MORE", drop=1)]
    keep = fit_columns(cols, rows, width)
    assert 0 in keep                                              # never dropped
    if needed_width(cols, rows, [0]) <= width:
        assert needed_width(cols, rows, keep) <= width
    assert keep == sorted(keep)
    if 1 in keep:                                                 # the higher drop rank goes first
        assert 2 in keep
