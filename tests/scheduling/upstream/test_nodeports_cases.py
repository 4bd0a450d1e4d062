"""NodePorts: upstream pkg/scheduler/framework/plugins/nodeports/node_ports_test.go.

Ported 29 cases: TestNodePorts 15 of 15 (hostIP / protocol semantics, 0.0.0.0 wildcard,
sidecar init containers), TestFits 5 of 5 and, from the kube-scheduler framework types_test.go,
TestHostPortInfo_Check 9 of 9 (the conflict rule itself), all as Filter verdicts (fits = success).
Skipped TestPreFilterDisabled (Filter without PreFilter state: Go plumbing) and the
queueing-hint test.
"""

import pytest

from .cases import UNSCHEDULABLE, container, node, plugin_status, pod, verdict

REASON = "node(s) didn't have free ports for the requested pod ports"
FAIL = (UNSCHEDULABLE, REASON)


def ports(*specs):
    """upstream newPod's "PROTO/hostIP/hostPort" strings -> container ports."""
    out = []
    for spec in specs:
        proto, ip, port = spec.split("/")
        out.append({"containerPort": int(port), "hostPort": int(port), "hostIP": ip, "protocol": proto})
    return out


def with_ports(*specs):
    return pod(containers=[container(ports=ports(*specs))])


def with_init_port(sidecar):
    p = [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}]
    return pod(init=[container(ports=p, name="init", restart_policy="Always" if sidecar else None)])


# node_ports_test.go TestNodePorts
@pytest.mark.parametrize("pending,used,want", [
    pytest.param(pod(), [], (), id="skip filter"),
    pytest.param(with_ports("UDP/127.0.0.1/8080"), ["UDP/127.0.0.1/9090"], (), id="other port"),
    pytest.param(with_ports("UDP/127.0.0.1/8080"), ["UDP/127.0.0.1/8080"], FAIL, id="same udp port"),
    pytest.param(with_ports("TCP/127.0.0.1/8080"), ["TCP/127.0.0.1/8080"], FAIL, id="same tcp port"),
    pytest.param(with_ports("TCP/127.0.0.1/8080"), ["TCP/127.0.0.2/8080"], (), id="different host ip"),
    pytest.param(with_ports("UDP/127.0.0.1/8080"), ["TCP/127.0.0.1/8080"], (), id="different protocol"),
    pytest.param(with_ports("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"), ["UDP/127.0.0.1/8080"], FAIL,
                 id="second udp port conflict"),
    pytest.param(with_ports("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"), ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
                 FAIL, id="first tcp port conflict"),
    pytest.param(with_ports("TCP/0.0.0.0/8001"), ["TCP/127.0.0.1/8001"], FAIL,
                 id="first tcp port conflict due to 0.0.0.0 hostIP"),
    pytest.param(with_ports("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"), ["TCP/127.0.0.1/8001"], FAIL,
                 id="TCP hostPort conflict due to 0.0.0.0 hostIP"),
    pytest.param(with_ports("TCP/127.0.0.1/8001"), ["TCP/0.0.0.0/8001"], FAIL,
                 id="second tcp port conflict to 0.0.0.0 hostIP"),
    pytest.param(with_ports("UDP/127.0.0.1/8001"), ["TCP/0.0.0.0/8001"], (), id="second different protocol"),
    pytest.param(with_ports("UDP/127.0.0.1/8001"), ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"], FAIL,
                 id="UDP hostPort conflict due to 0.0.0.0 hostIP"),
    pytest.param(with_init_port(False), ["TCP/0.0.0.0/8001"], (), id="non-sidecar initContainer using hostPort"),
    pytest.param(with_init_port(True), ["TCP/0.0.0.0/8001"], FAIL,
                 id="TCP hostPort conflict from sidecar initContainer"),
])
def test_node_ports(pending, used, want):
    existing = [with_ports(*used)] if used else []
    assert verdict(plugin_status("NodePorts", pending, [node()], existing)) == want


# node_ports_test.go TestFits
@pytest.mark.parametrize("wanted,used,fits", [
    pytest.param(["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/9090"], True, id="non-conflicting ports"),
    pytest.param(["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
                 ["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"], True,
                 id="multiple non-conflicting ports"),
    pytest.param(["TCP/127.0.0.1/80"], ["UDP/127.0.0.1/80"], True, id="same ports on different protocols"),
    pytest.param(["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/80"], False, id="conflicting ports"),
    pytest.param(["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
                 ["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"], False,
                 id="multiple ports, some conflicting"),
])
def test_fits(wanted, used, fits):
    got = verdict(plugin_status("NodePorts", with_ports(*wanted), [node()], [with_ports(*used)]))
    assert got == (() if fits else FAIL)


def one_port(proto, ip, port):
    p = {"containerPort": port or 80, "hostPort": port, "hostIP": ip, "protocol": proto}
    return pod(containers=[container(ports=[p])])


# kube-scheduler framework types_test.go TestHostPortInfo_Check: the conflict rule NodePorts applies
# (empty protocol is TCP, empty hostIP is 0.0.0.0, port 0 asks for nothing), as a Filter verdict
@pytest.mark.parametrize("used,check,conflict", [
    pytest.param(["TCP/127.0.0.1/80"], ("", "", 81), False, id="empty check should check 0.0.0.0 and TCP"),
    pytest.param(["TCP/127.0.0.1/80"], ("", "", 80), True, id="empty check should check 0.0.0.0 and TCP (conflicted)"),
    pytest.param(["TCP/127.0.0.1/80"], ("", "", 0), False, id="empty port check should pass"),
    pytest.param(["TCP/127.0.0.1/80"], ("TCP", "0.0.0.0", 80), True, id="0.0.0.0 should check all registered IPs"),
    pytest.param(["UDP/127.0.0.1/80"], ("TCP", "0.0.0.0", 80), False,
                 id="0.0.0.0 with different protocol should be allowed"),
    pytest.param(["TCP/127.0.0.1/79", "TCP/127.0.0.1/81", "TCP/127.0.0.1/82"], ("TCP", "0.0.0.0", 80), False,
                 id="0.0.0.0 with different port should be allowed"),
    pytest.param(["TCP/0.0.0.0/80"], ("TCP", "127.0.0.1", 80), True,
                 id="normal ip should check all registered 0.0.0.0"),
    pytest.param(["TCP/0.0.0.0/79", "UDP/0.0.0.0/80", "TCP/0.0.0.0/81", "TCP/0.0.0.0/82"], ("TCP", "127.0.0.1", 80),
                 False, id="normal ip with different port/protocol should be allowed (0.0.0.0)"),
    pytest.param(["TCP/127.0.0.1/79", "UDP/127.0.0.1/80", "TCP/127.0.0.1/81", "TCP/127.0.0.1/82"],
                 ("TCP", "127.0.0.1", 80), False, id="normal ip with different port/protocol should be allowed"),
])
def test_host_port_info_check(used, check, conflict):
    got = verdict(plugin_status("NodePorts", one_port(*check), [node()], [with_ports(*used)]))
    assert got == (FAIL if conflict else ())
