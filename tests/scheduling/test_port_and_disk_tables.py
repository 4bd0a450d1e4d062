"""NodePorts and VolumeRestrictions answer from per-cycle flat tables; a plain per-node reading of
the same rules (`ports_conflict`, `disk_conflict`) is the oracle. Random clusters, with pods
hidden (preemption's view) and nominated pods added, must get identical verdicts."""

import random

import numpy as np
import pytest
from sched_builders import cluster, node, pod

from kubegpu.scheduling.cycle import run_filters
from kubegpu.scheduling.filters.nodeports import ports_conflict
from kubegpu.scheduling.filters.volumerestrictions import disk_conflict, pod_disk_keys
from kubegpu.scheduling.snapshot import SchedulingSnapshot
from kubegpu.scheduling.versions import NEWEST

IPS = ["", "0.0.0.0", "10.0.0.1", "10.0.0.2"]
DISKS = [{"gcePersistentDisk": {"pdName": "a"}}, {"gcePersistentDisk": {"pdName": "a", "readOnly": True}},
         {"awsElasticBlockStore": {"volumeID": "b"}}, {"iscsi": {"iqn": "q", "readOnly": True}},
         {"rbd": {"monitors": ["m1", "m2"], "image": "i"}}, {"rbd": {"monitors": ["m2", "m3"], "image": "i"}}]


def _random_pod(rng, name, node_name=None, **kw):
    ports = [{"containerPort": 1, "hostPort": rng.choice([80, 81]), "hostIP": rng.choice(IPS),
              "protocol": rng.choice(["TCP", "UDP"])} for _ in range(rng.randint(0, 2))]
    vols = [{"name": f"v{k}", **rng.choice(DISKS)} for k in range(rng.randint(0, 2))]
    return pod(name, node_name=node_name, ports=ports or None, volumes=vols or None, cpu="10m", memory="1Mi", **kw)


def _oracle(snapshot, view, pending):
    info = snapshot.pod_info(pending)
    ports, disks = [], []
    for i in range(len(snapshot.nodes)):
        infos = view.infos_on(i)
        ports.append(any(ports_conflict(w, u) for o in infos for u in o.host_ports for w in info.host_ports))
        disks.append(any(disk_conflict(pod_disk_keys(pending), pod_disk_keys(o.pod)) for o in infos))
    return np.asarray(ports), np.asarray(disks)


@pytest.mark.parametrize("seed", range(12))
def test_flat_tables_agree_with_the_per_node_oracle(seed):
    rng = random.Random(seed)
    nodes = [node(f"n{i}") for i in range(6)]
    bound = [_random_pod(rng, f"b{k}", f"n{rng.randrange(6)}", priority=rng.choice([0, 10])) for k in range(25)]
    nominated = [_random_pod(rng, f"nom{k}", nominated=f"n{rng.randrange(6)}", priority=100) for k in range(2)]
    pending = _random_pod(rng, "p", priority=50)
    state = cluster(*nodes, *bound, *nominated, pending)
    snap = SchedulingSnapshot.from_cluster(state)
    target = state.pod("default", "p")
    low = np.zeros(len(snap.alive), dtype=bool)
    low[: snap.slot_count] = snap.pod_prio[: snap.slot_count] < 10
    for view in (snap.view(snap.pod_info(target)), snap.view().without(low)):
        outcome = run_filters(snap, target, NEWEST, view=view)
        want_ports, want_disks = _oracle(snap, view, target)
        got = {name: res.code != 0 for name, res in zip(outcome.plugins, outcome.results)}
        if "NodePorts" in got:
            assert (got["NodePorts"] == want_ports).all()
        else:
            assert not want_ports.any()
        if "VolumeRestrictions" in got:
            assert (got["VolumeRestrictions"] == want_disks).all()
        else:
            assert not want_disks.any()
