"""Resolving the cluster the way kubectl does: --kubeconfig, merged $KUBECONFIG lists, ~/.kube/config,
--context, the in-cluster service account, and one-line errors when none of them works."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
import yaml

from kubegpu.errors import SourceError, UsageError
from kubegpu.sources import kubeconfig as kc
from kubegpu.sources.kubeconfig import NO_CLUSTER, merge_kubeconfigs, request_timeouts, resolve_cluster
from kubegpu.sources.live import read_live


def write_config(path: Path, *, clusters=(), users=(), contexts=(), current=None) -> Path:
    conf = {"apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": n, "cluster": c} for n, c in clusters],
            "users": [{"name": n, "user": u} for n, u in users],
            "contexts": [{"name": n, "context": c} for n, c in contexts]}
    if current:
        conf["current-context"] = current
    path.write_text(yaml.safe_dump(conf))
    return path


def test_nothing_configured_says_how_to_pick_a_source(clean_env):
    with pytest.raises(SourceError) as err:
        resolve_cluster()
    assert str(err.value) == NO_CLUSTER
    assert "--demo" in NO_CLUSTER and "--snapshot" in NO_CLUSTER and "KUBECONFIG" in NO_CLUSTER


def test_nothing_configured_through_the_cli_is_one_line_and_exit_2(clean_env, tmp_path, run_kubegpu):
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(clean_env)
    result = run_kubegpu("status", env=env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: {NO_CLUSTER}"]
    assert result.stdout == ""


def test_home_kube_config_is_the_default(clean_env):
    (clean_env / ".kube").mkdir()
    write_config(clean_env / ".kube" / "config", clusters=[("c", {"server": "https://10.0.0.1:6443"})],
                 users=[("u", {"token": "t"})], contexts=[("home", {"cluster": "c", "user": "u"})], current="home")
    cluster = resolve_cluster()
    assert (cluster.context, cluster.server, cluster.user) == ("home", "https://10.0.0.1:6443", "u")
    assert cluster.single.user.token == "t"


def test_explicit_kubeconfig_wins_over_the_environment(clean_env, tmp_path, monkeypatch):
    env_file = write_config(tmp_path / "env.yaml", clusters=[("c", {"server": "https://env:6443"})],
                            contexts=[("env", {"cluster": "c"})], current="env")
    flag_file = write_config(tmp_path / "flag.yaml", clusters=[("c", {"server": "https://flag:6443"})],
                             contexts=[("flag", {"cluster": "c"})], current="flag")
    monkeypatch.setenv("KUBECONFIG", str(env_file))
    assert resolve_cluster().server == "https://env:6443"
    assert resolve_cluster(str(flag_file)).server == "https://flag:6443"


def test_explicit_kubeconfig_that_does_not_exist_is_an_error(clean_env, tmp_path):
    with pytest.raises(SourceError, match=r"missing\.yaml: kubeconfig not found \(from --kubeconfig\)"):
        resolve_cluster(str(tmp_path / "missing.yaml"))


def test_kubeconfig_list_is_merged_first_file_wins(clean_env, tmp_path, monkeypatch):
    # file a: no current-context, defines cluster "shared"; file b: redefines "shared", sets current-context
    a = write_config(tmp_path / "a.yaml", clusters=[("shared", {"server": "https://from-a:6443"})],
                     users=[("alice", {"token": "token-a"})],
                     contexts=[("ctx-a", {"cluster": "shared", "user": "alice"})])
    b = write_config(tmp_path / "b.yaml", clusters=[("shared", {"server": "https://from-b:6443"}),
                                                   ("only-b", {"server": "https://only-b:6443"})],
                     users=[("alice", {"token": "token-b"}), ("bob", {"token": "token-bob"})],
                     contexts=[("ctx-a", {"cluster": "only-b", "user": "bob"}),
                               ("ctx-b", {"cluster": "only-b", "user": "bob"})],
                     current="ctx-a")
    c = write_config(tmp_path / "c.yaml", contexts=[("ctx-c", {"cluster": "only-b"})], current="ctx-c")
    missing = tmp_path / "missing.yaml"
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(missing), str(a), str(b), str(c)]))

    cluster = resolve_cluster()
    # current-context from the first file that sets it (b, not c); ctx-a and "shared" from a (first wins)
    assert cluster.context == "ctx-a"
    assert cluster.server == "https://from-a:6443"
    assert cluster.single.user.token == "token-a"
    assert str(a) in cluster.origin and str(b) in cluster.origin and str(missing) not in cluster.origin
    # entries only later files define are still there
    assert resolve_cluster(context="ctx-b").server == "https://only-b:6443"
    assert resolve_cluster(context="ctx-c").server == "https://only-b:6443"


def test_merge_keeps_first_definition_of_every_name():
    merged = merge_kubeconfigs([
        {"clusters": [{"name": "x", "cluster": {"server": "1"}}], "contexts": [], "users": []},
        {"current-context": "later", "clusters": [{"name": "x", "cluster": {"server": "2"}},
                                                  {"name": "y", "cluster": {"server": "3"}}]},
    ])
    assert merged["clusters"] == [{"name": "x", "cluster": {"server": "1"}}, {"name": "y", "cluster": {"server": "3"}}]
    assert merged["current-context"] == "later"


def test_relative_paths_resolve_against_the_file_that_names_them(clean_env, tmp_path, monkeypatch):
    sub = tmp_path / "configs"
    sub.mkdir()
    f = write_config(sub / "kc.yaml", clusters=[("c", {"server": "https://x:6443", "certificate-authority": "ca.crt"})],
                     users=[("u", {"client-certificate": "certs/u.crt", "client-key": "certs/u.key",
                                   "tokenFile": "/abs/token"})],
                     contexts=[("ctx", {"cluster": "c", "user": "u"})], current="ctx")
    monkeypatch.setenv("KUBECONFIG", str(f))
    cluster = resolve_cluster()
    assert cluster.single.cluster.certificate_auth == str(sub / "ca.crt")
    assert cluster.single.user.client_cert == str(sub / "certs/u.crt")
    assert cluster.single.user.client_key == str(sub / "certs/u.key")
    assert cluster.single.user.token_file == "/abs/token"


def test_unknown_context_lists_the_known_ones(clean_env, tmp_path):
    f = write_config(tmp_path / "kc.yaml", clusters=[("c", {"server": "https://x:6443"})],
                     contexts=[("prod", {"cluster": "c"}), ("staging", {"cluster": "c"})], current="prod")
    assert resolve_cluster(str(f), "staging").context == "staging"
    with pytest.raises(SourceError) as err:
        resolve_cluster(str(f), "dev")
    assert str(err.value) == f"context 'dev' not found in {f}; known contexts: prod, staging"


def test_unknown_context_through_the_cli(clean_env, tmp_path, run_kubegpu):
    f = write_config(tmp_path / "kc.yaml", clusters=[("c", {"server": "https://x:6443"})],
                     contexts=[("prod", {"cluster": "c"})], current="prod")
    result = run_kubegpu("status", "--kubeconfig", str(f), "--context", "dev")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"error: context 'dev' not found in {f}; known contexts: prod"]


@pytest.mark.parametrize("conf, message", [
    ({"clusters": [{"name": "c", "cluster": {"server": "https://x"}}], "contexts": [{"name": "a", "context":
      {"cluster": "c"}}]}, "no current-context set; pass --context (one of a)"),
    ({"clusters": [], "contexts": [{"name": "a", "context": {"cluster": "gone"}}], "current-context": "a"},
     "context 'a' refers to cluster 'gone'"),
    ({"clusters": [{"name": "c", "cluster": {"server": "https://x"}}], "contexts": [{"name": "a", "context":
      {"cluster": "c", "user": "nobody"}}], "current-context": "a"}, "context 'a' refers to user 'nobody'"),
    ({"clusters": [{"name": "c", "cluster": {}}], "contexts": [{"name": "a", "context": {"cluster": "c"}}],
      "current-context": "a"}, "cluster 'c' has no server"),
    ({"clusters": {"c": {}}}, "field clusters: expected a list"),
    ({"clusters": [{"cluster": {"server": "https://x"}}]}, "field clusters[0].name"),
    (["not", "a", "mapping"], "kubeconfig must be a mapping"),
])
def test_broken_kubeconfigs_are_one_line_errors_naming_the_file(clean_env, tmp_path, conf, message):
    f = tmp_path / "kc.yaml"
    f.write_text(yaml.safe_dump(conf))
    with pytest.raises(SourceError) as err:
        resolve_cluster(str(f))
    assert message in str(err.value)
    assert str(f) in str(err.value)
    assert "\n" not in str(err.value)


def test_malformed_yaml_kubeconfig_names_file_and_line(clean_env, tmp_path):
    f = tmp_path / "kc.yaml"
    f.write_text("clusters:\n  - name: [c\n")
    with pytest.raises(SourceError, match=r"kc\.yaml: malformed YAML at line \d+"):
        resolve_cluster(str(f))


def test_kubeconfig_list_of_missing_files_is_no_cluster(clean_env, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-1") + os.pathsep + str(tmp_path / "missing-2"))
    with pytest.raises(SourceError, match="no cluster configured"):
        resolve_cluster()


def service_account(folder: Path, token: str, ca: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "token").write_text(token + "\n")
    (folder / "namespace").write_text("kubegpu")
    (folder / "ca.crt").write_bytes(ca.read_bytes())
    return folder


def test_in_cluster_service_account_reads_the_live_cluster(clean_env, tmp_path, monkeypatch, tls_apiserver):
    tls_apiserver.tokens["sa-token"] = "system:serviceaccount:kubegpu:kubegpu"
    tls_apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-a"}})
    account = service_account(tmp_path / "sa", "sa-token", tls_apiserver.certs.ca_file)
    port = tls_apiserver.url.rsplit(":", 1)[1]
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    monkeypatch.setattr(kc, "SERVICE_ACCOUNT_DIR", str(account))

    cluster = resolve_cluster()
    assert (cluster.context, cluster.server) == ("in-cluster", f"https://127.0.0.1:{port}")
    docs = read_live(kubeconfig=None, context=None)
    assert docs.source == "live:in-cluster"
    assert [json.loads(bytes(d))["metadata"]["name"] for d in docs.items] == ["gpu-a"]
    assert {r.user for r in tls_apiserver.paths("/api/v1/nodes")} == {"system:serviceaccount:kubegpu:kubegpu"}


def test_in_cluster_without_port_is_an_error(clean_env, tmp_path, monkeypatch, server_certs):
    account = service_account(tmp_path / "sa", "t", server_certs.ca_file)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setattr(kc, "SERVICE_ACCOUNT_DIR", str(account))
    with pytest.raises(SourceError, match="KUBERNETES_SERVICE_PORT"):
        resolve_cluster()


def test_kubeconfig_is_preferred_over_in_cluster(clean_env, tmp_path, monkeypatch, server_certs):
    account = service_account(tmp_path / "sa", "t", server_certs.ca_file)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    monkeypatch.setattr(kc, "SERVICE_ACCOUNT_DIR", str(account))
    (clean_env / ".kube").mkdir()
    write_config(clean_env / ".kube" / "config", clusters=[("c", {"server": "https://home:6443"})],
                 contexts=[("home", {"cluster": "c"})], current="home")
    assert resolve_cluster().context == "home"


def exec_plugin(folder: Path, api_version: str, token: str) -> Path:
    """A credential plugin (a Python script) that prints an ExecCredential and records its env."""
    script = folder / "fake-login"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, pathlib\n"
        f"pathlib.Path({str(folder / 'exec-info.json')!r}).write_text(os.environ.get('KUBERNETES_EXEC_INFO', ''))\n"
        f"print(json.dumps({{'apiVersion': {api_version!r}, 'kind': 'ExecCredential',"
        f" 'status': {{'token': {token!r}}}}}))\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@pytest.mark.parametrize("api_version", ["client.authentication.k8s.io/v1beta1", "client.authentication.k8s.io/v1"])
def test_exec_credential_plugins_supply_the_token(clean_env, tmp_path, apiserver, api_version):
    apiserver.tokens["from-plugin"] = "oidc:alice"
    apiserver.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-a"}})
    plugin = exec_plugin(tmp_path, api_version, "from-plugin")
    f = write_config(tmp_path / "kc.yaml", clusters=[("c", {"server": apiserver.url})],
                     users=[("alice", {"exec": {"apiVersion": api_version, "command": str(plugin)}})],
                     contexts=[("ctx", {"cluster": "c", "user": "alice"})], current="ctx")
    docs = read_live(kubeconfig=str(f), context=None)
    assert len(docs.items) == 1
    assert {r.user for r in apiserver.paths("/api/v1/nodes")} == {"oidc:alice"}
    if api_version.endswith("/v1"):
        assert json.loads((tmp_path / "exec-info.json").read_text())["apiVersion"] == api_version


def test_missing_exec_plugin_is_named(clean_env, tmp_path, apiserver):
    f = write_config(tmp_path / "kc.yaml", clusters=[("c", {"server": apiserver.url})],
                     users=[("alice", {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                "command": "kubegpu-no-such-login-plugin"}})],
                     contexts=[("ctx", {"cluster": "c", "user": "alice"})], current="ctx")
    with pytest.raises(SourceError, match="credential plugin kubegpu-no-such-login-plugin for user 'alice'"):
        read_live(kubeconfig=str(f), context=None)


def test_legacy_auth_provider_is_refused_with_the_way_out(clean_env, tmp_path, apiserver):
    f = write_config(tmp_path / "kc.yaml", clusters=[("c", {"server": apiserver.url})],
                     users=[("gke", {"auth-provider": {"name": "gcp"}})],
                     contexts=[("ctx", {"cluster": "c", "user": "gke"})], current="ctx")
    with pytest.raises(SourceError, match="auth-provider is not supported; use an exec credential plugin"):
        read_live(kubeconfig=str(f), context=None)


@pytest.mark.parametrize("setting, expected", [(None, (5.0, 30.0)), ("120", (5.0, 120.0)), ("0.5", (0.5, 0.5))])
def test_timeouts_default_and_override(setting, expected):
    t = request_timeouts(setting)
    assert (t.connect, t.read) == expected


@pytest.mark.parametrize("setting", ["soon", "0", "-3", "inf", "nan"])
def test_bad_timeout_setting_is_a_usage_error(setting):
    with pytest.raises(UsageError, match="KUBEGPU_TIMEOUT"):
        request_timeouts(setting)
