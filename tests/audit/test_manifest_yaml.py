"""The PDB patch is written without PyYAML's representer, and is the text yaml.dump writes."""

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegpu.audit.checks.preemption import manifest_yaml

names = st.one_of(st.text(max_size=8), st.from_regex(r"[A-Za-z][A-Za-z0-9._/-]{0,10}", fullmatch=True),
                  st.sampled_from(["yes", "Off", "NULL", "y", "a" * 99, "a" * 100, "a" * 130]))
scalars = st.one_of(names, st.integers(-2**63, 2**63 - 1),
                    st.sampled_from(["true", "null", "012", "1e3", "a: b", "- x", "#c", "~", "", "ünï", "\t"]))
manifests = st.recursive(scalars, lambda inner: st.dictionaries(names, inner, max_size=4), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(names, manifests, min_size=1, max_size=4))
def test_manifest_yaml_is_what_yaml_dump_writes(manifest):
    assert manifest_yaml(manifest) == yaml.dump(manifest, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
                                                sort_keys=False)
    assert yaml.safe_load(manifest_yaml(manifest)) == manifest


def test_a_pdb_of_plain_names_is_what_yaml_dump_writes():
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "train-llm-pdb", "namespace": "ml"},
           "spec": {"minAvailable": 8, "selector": {"matchLabels": {"app.kubernetes.io/name": "train-llm"}}}}
    assert manifest_yaml(pdb) == yaml.dump(pdb, sort_keys=False)
