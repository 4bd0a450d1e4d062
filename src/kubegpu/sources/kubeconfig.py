"""Which cluster to talk to, resolved the way kubectl resolves it.

Precedence (client-go's loading rules): `--kubeconfig FILE`; else `$KUBECONFIG`, a list
separated by os.pathsep whose files are merged (the first file to set a cluster, user or
context name wins; current-context comes from the first file that sets it; missing files are
skipped); else `~/.kube/config`; else the in-cluster service account. lightkube does not merge
KUBECONFIG lists, so we merge here and hand it the result via `KubeConfig.from_dict`; its
transport (TLS, tokens, client certificates, exec plugins) then makes the HTTP client.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import httpx2
from lightkube import Client
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import SERVICE_ACCOUNT, KubeConfig, SingleConfig
from lightkube.config.models import User, UserExec
from lightkube.core.exceptions import ConfigError

from kubegpu import __version__
from kubegpu.errors import InputError, SourceError, UsageError
from kubegpu.guards.bounded import path_text, read_bounded
from kubegpu.guards.safe_yaml import load_yaml_documents

IN_CLUSTER = "in-cluster"
SERVICE_ACCOUNT_DIR = SERVICE_ACCOUNT  # /var/run/secrets/kubernetes.io/serviceaccount
NO_CLUSTER = ("no cluster configured: pass --demo, --snapshot FILE, or point --kubeconfig/KUBECONFIG at a cluster")
_NAMED_SECTIONS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))
# client-go ResolveLocalPaths: these fields are relative to the file that defines them
_CLUSTER_PATHS = ("certificate-authority",)
_USER_PATHS = ("client-certificate", "client-key", "tokenFile")


@dataclass(frozen=True)
class ClusterConfig:
    """One usable cluster connection: lightkube's SingleConfig plus names for error messages."""

    single: SingleConfig
    context: str
    user: str | None
    origin: str  # the kubeconfig file(s), or "in-cluster service account"

    @property
    def server(self) -> str:
        return self.single.cluster.server


MAX_KUBECONFIG_BYTES = 64 << 20


def _is_file_like(path: Path) -> bool:
    """A regular file, or a FIFO such as bash's `<(...)` (read with the bounded reader's timeout)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISFIFO(mode)


def _read_kubeconfig_file(path: Path) -> dict[str, Any]:
    """One kubeconfig file as a dict with local paths made absolute; SourceError if unusable."""
    where = path_text(path)
    try:  # bounded in size, and in time for a FIFO (`--kubeconfig <(...)`)
        text = read_bounded(path, where=where, max_bytes=MAX_KUBECONFIG_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise SourceError(f"{where}: kubeconfig is not UTF-8 text") from None
    except InputError as err:
        raise SourceError(f"{where}: cannot read kubeconfig: {err.message}") from None
    try:
        docs = [d for d in load_yaml_documents(text, where=where) if d is not None]
    except InputError as err:
        raise SourceError(str(err)) from None
    if not docs:
        return {}
    conf = docs[0]
    if not isinstance(conf, dict):
        raise SourceError(f"{where}: kubeconfig must be a mapping, got {type(conf).__name__}")
    for section, body_key in _NAMED_SECTIONS:
        entries = conf.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise SourceError(f"{where}: field {section}: expected a list, got {type(entries).__name__}")
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise SourceError(f"{where}: field {section}[{i}].name: every entry needs a name")
            body = entry.get(body_key)
            if body is None:
                entry[body_key] = body = {}
            if not isinstance(body, dict):
                raise SourceError(f"{where}: field {section}[{i}].{body_key}: expected a mapping")
            _resolve_local_paths(body, section, path.parent)
    current = conf.get("current-context")
    if current is not None and not isinstance(current, str):
        raise SourceError(f"{where}: field current-context: expected a string")
    return conf


def _resolve_local_paths(body: dict[str, Any], section: str, base: Path) -> None:
    keys = _CLUSTER_PATHS if section == "clusters" else _USER_PATHS if section == "users" else ()
    for key in keys:
        value = body.get(key)
        if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
            body[key] = str(base / value)
        elif isinstance(value, str) and value.startswith("~"):
            body[key] = str(Path(value).expanduser())
    exec_conf = body.get("exec") if section == "users" else None
    if isinstance(exec_conf, dict):
        command = exec_conf.get("command")
        # client-go resolves the exec command only when it is a path, not a name looked up on PATH
        if isinstance(command, str) and os.sep in command and not Path(command).is_absolute():
            exec_conf["command"] = str(base / command)


def merge_kubeconfigs(confs: list[dict[str, Any]]) -> dict[str, Any]:
    """kubectl's merge: for each named entry and for current-context, the first file that sets it wins."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    seen: dict[str, set[str]] = {section: set() for section, _ in _NAMED_SECTIONS}
    for conf in confs:
        if merged.get("current-context") is None and conf.get("current-context"):
            merged["current-context"] = conf["current-context"]
        for section, _ in _NAMED_SECTIONS:
            for entry in conf.get(section) or []:
                if entry["name"] not in seen[section]:
                    seen[section].add(entry["name"])
                    merged[section].append(entry)
    return merged


def kubeconfig_paths(kubeconfig: str | None) -> tuple[list[Path], bool]:
    """The files to read and whether the user named them explicitly (then a missing file is an error)."""
    if kubeconfig:
        return [Path(kubeconfig).expanduser()], True
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        paths: list[Path] = []
        for part in listed.split(os.pathsep):
            if part and Path(part).expanduser() not in paths:
                paths.append(Path(part).expanduser())
        return paths, False
    return [Path("~/.kube/config").expanduser()], False


def _in_cluster_available(account_dir: Path) -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (account_dir / "token").is_file()


def _in_cluster(account_dir: Path) -> ClusterConfig:
    if not os.environ.get("KUBERNETES_SERVICE_PORT"):
        raise SourceError("in-cluster config: KUBERNETES_SERVICE_HOST is set but KUBERNETES_SERVICE_PORT is not")
    try:
        config = KubeConfig.from_service_account(service_account=account_dir)
    except ConfigError as err:
        raise SourceError(f"in-cluster service account {account_dir}: {err}") from None
    single = config.get()
    assert single is not None  # from_service_account always sets current-context
    return ClusterConfig(single=single, context=IN_CLUSTER, user="service account",
                         origin=f"{IN_CLUSTER} service account ({account_dir})")


def _check_server_url(server: str, cluster: str, origin: str) -> None:
    """A server URL the HTTP client cannot parse (`https://[::1`) is a kubeconfig error, as kubectl says."""
    try:
        httpx2.URL(server)
    except (httpx2.InvalidURL, ValueError, TypeError) as err:
        raise SourceError(f"{origin}: cluster {cluster!r}: server {server!r} is not a valid URL: {err}") from None


def _select_context(merged: dict[str, Any], context: str | None, origin: str) -> ClusterConfig:
    try:
        config = KubeConfig.from_dict(merged)
    except (ValueError, TypeError, KeyError) as err:  # msgspec.ValidationError is a ValueError
        raise SourceError(f"{origin}: invalid kubeconfig: {err}") from None
    known = sorted(config.contexts)
    name = context or config.current_context
    if not name:
        raise SourceError(f"{origin}: no current-context set; pass --context "
                          f"({'one of ' + ', '.join(known) if known else 'no contexts defined'})")
    ctx = config.contexts.get(name)
    if ctx is None:
        raise SourceError(f"context {name!r} not found in {origin}; known contexts: "
                          f"{', '.join(known) if known else 'none'}")
    cluster = config.clusters.get(ctx.cluster)
    if cluster is None:
        raise SourceError(f"context {name!r} refers to cluster {ctx.cluster!r}, which {origin} does not define")
    cluster_entry = next(e for e in merged["clusters"] if e["name"] == ctx.cluster)
    if not cluster_entry["cluster"].get("server"):
        raise SourceError(f"{origin}: cluster {ctx.cluster!r} has no server")
    _check_server_url(str(cluster_entry["cluster"]["server"]), ctx.cluster, origin)
    user: User | None = None
    if ctx.user:
        user = config.users.get(ctx.user)
        if user is None:
            raise SourceError(f"context {name!r} refers to user {ctx.user!r}, which {origin} does not define")
    single = SingleConfig(context_name=name, context=ctx, cluster=cluster, user=user or User(), fname=None)
    return ClusterConfig(single=single, context=name, user=ctx.user, origin=origin)


def resolve_cluster(kubeconfig: str | None = None, context: str | None = None, *,
                    service_account_dir: str | Path | None = None) -> ClusterConfig:
    """The cluster kubectl would talk to with these flags and this environment."""
    account_dir = Path(service_account_dir or SERVICE_ACCOUNT_DIR)
    paths, explicit = kubeconfig_paths(kubeconfig)
    if explicit and not _is_file_like(paths[0]):
        raise SourceError(f"{path_text(paths[0])}: kubeconfig not found (from --kubeconfig)")
    found = [p for p in paths if _is_file_like(p)]
    confs = [_read_kubeconfig_file(p) for p in found]
    merged = merge_kubeconfigs(confs)
    origin = os.pathsep.join(path_text(p) for p in found)
    if merged["contexts"] or merged["clusters"]:
        return _select_context(merged, context, origin)
    if explicit:
        raise SourceError(f"{paths[0]}: kubeconfig defines no contexts")
    if _in_cluster_available(account_dir):
        if context and context != IN_CLUSTER:
            raise SourceError(f"context {context!r} not found: no kubeconfig, only the in-cluster service account")
        return _in_cluster(account_dir)
    raise SourceError(NO_CLUSTER)


# --- from a resolved cluster to an HTTP client -------------------------------------------------

CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 30.0
EXEC_V1 = "client.authentication.k8s.io/v1"


@dataclass(frozen=True)
class Timeouts:
    connect: float = CONNECT_TIMEOUT
    read: float = READ_TIMEOUT


def request_timeouts(setting: str | None) -> Timeouts:
    """Timeouts from $KUBEGPU_TIMEOUT (seconds to wait for an answer; connecting waits at most 5 s)."""
    if not setting:
        return Timeouts()
    try:
        seconds = float(setting)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise UsageError(f"KUBEGPU_TIMEOUT={setting!r} is not a positive number of seconds")
    return Timeouts(connect=min(CONNECT_TIMEOUT, seconds), read=seconds)


EXEC_TIMEOUT = 30.0  # seconds a credential plugin may take (client-go has no limit; a hung plugin hangs kubectl)


class _ExecAuth(client_adapter.ExecAuth):
    """Exec credential plugins (v1alpha1, v1beta1 and the GA v1), run with bounds.

    lightkube 1.0 accepts only v1alpha1/v1beta1, yet v1 plugins print the same ExecCredential
    (status.token); client-go tells them the version through KUBERNETES_EXEC_INFO. The plugin
    gets no stdin (non-interactive), `EXEC_TIMEOUT` seconds, and whatever goes wrong (garbage
    on stdout, a non-zero exit, a hang) is one SourceError naming the kubeconfig user and plugin.
    """

    def __init__(self, exec_conf: UserExec, cluster: "ClusterConfig") -> None:
        super().__init__(exec_conf)
        self._cluster = cluster

    def _prepare(self) -> tuple[list[str], dict[str, str]]:
        exec_conf = self._exec
        env = dict(os.environ)
        env.update((v.name, v.value) for v in exec_conf.env or [])
        version = exec_conf.apiVersion or EXEC_V1
        env["KUBERNETES_EXEC_INFO"] = ('{"apiVersion":"%s","kind":"ExecCredential","spec":{"interactive":false}}'
                                       % version)
        return [exec_conf.command, *(exec_conf.args or [])], env

    def _fail(self, command: str, what: str) -> SourceError:
        c = self._cluster
        return SourceError(f"credential plugin {command} for user {c.user!r} (context {c.context}) {what}")

    def token(self) -> str:
        command, env = self._prepare()
        try:
            proc = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=EXEC_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise self._fail(command[0], f"did not answer within {EXEC_TIMEOUT:g} s") from None
        except FileNotFoundError:
            raise self._fail(command[0], "not found; install it or fix users[].user.exec.command") from None
        except OSError as err:
            raise self._fail(command[0], f"cannot run: {err.strerror or err}") from None
        if proc.returncode != 0:
            first = next((ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()), "")
            raise self._fail(command[0], f"exited with status {proc.returncode}" + (f": {first.strip()[:200]}"
                                                                                       if first else ""))
        try:
            body = json.loads(proc.stdout)
            token = body["status"]["token"]
        except (ValueError, KeyError, TypeError):
            raise self._fail(command[0], "printed no ExecCredential with status.token") from None
        if not isinstance(token, str) or not token or any(ch in token for ch in "\r\n\0"):
            raise self._fail(command[0], "printed an ExecCredential whose status.token is not a usable token")
        return token

    def sync_auth_flow(self, request):
        if self._last_bearer:
            request.headers["Authorization"] = self._last_bearer
            response = yield request
            if response.status_code != 401:
                return
        request.headers["Authorization"] = self._last_bearer = f"Bearer {self.token()}"
        yield request


def _check_referenced_files(cluster: ClusterConfig) -> None:
    """Name a missing CA, certificate, key or token file (ssl's own error does not say which)."""
    single = cluster.single
    user = single.user or User()
    for field, value in (("certificate-authority", single.cluster.certificate_auth),
                         ("client-certificate", user.client_cert), ("client-key", user.client_key),
                         ("tokenFile", user.token_file)):
        if value and not Path(value).is_file():
            raise SourceError(f"context {cluster.context} ({cluster.origin}): {field} {value} not found")


def http_client(cluster: ClusterConfig, timeouts: Timeouts) -> httpx2.Client:
    """An HTTP client for the cluster: lightkube's TLS and auth, our timeouts, JSON only."""
    params = client_adapter.ConnectionParams(timeout=httpx2.Timeout(timeouts.read, connect=timeouts.connect))
    single = cluster.single
    _check_referenced_files(cluster)
    try:
        kwargs = params.httpx_params(single)
    except ConfigError as err:
        text = str(err)
        if "auth-provider" in text:
            text = ("the legacy auth-provider is not supported; use an exec credential plugin "
                    "(gke-gcloud-auth-plugin, kubelogin, aws eks get-token)")
        raise SourceError(f"user {cluster.user!r} of context {cluster.context}: {text}") from None
    except (OSError, ValueError) as err:  # unreadable CA/cert/key files, bad base64 data
        text = str(err)
        if isinstance(err, OSError) and err.strerror:
            text = f"{err.strerror}: {err.filename}" if err.filename else err.strerror
        raise SourceError(f"TLS settings of context {cluster.context} ({cluster.origin}): {text}") from None
    user_exec: UserExec | None = single.user.exec if single.user else None
    if user_exec is not None:
        kwargs["auth"] = _ExecAuth(user_exec, cluster)
    headers = {"Accept": "application/json", "User-Agent": f"kubegpu/{__version__}"}
    return httpx2.Client(headers=headers, **kwargs)


def lightkube_client(kubeconfig: str | None = None, context: str | None = None,
                     timeouts: Timeouts | None = None):
    """A lightkube Client for the cluster kubectl would use, with kubegpu's auth handling.

    lightkube 1.0's own transport rejects exec credential plugins of API v1, so the client's
    HTTP layer is swapped for `http_client` (same TLS and auth, plus exec v1). Pinned lightkube<2.
    Without `timeouts`, $KUBEGPU_TIMEOUT sets them, as for the read-only live source.
    """
    cluster = resolve_cluster(kubeconfig, context)
    t = timeouts or request_timeouts(os.environ.get("KUBEGPU_TIMEOUT"))
    client = Client(config=cluster.single, timeout=httpx2.Timeout(t.read, connect=t.connect), trust_env=False)
    client._client._client = http_client(cluster, t)
    return client


# --- connection failures as one line ------------------------------------------------------------

def _causes(err: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = err
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def transport_error(err: httpx2.HTTPError, cluster: ClusterConfig, timeouts: Timeouts, path: str) -> SourceError:
    """The one-line SourceError for a request that got no HTTP answer."""
    server = cluster.server
    for cause in _causes(err):
        if isinstance(cause, ssl.SSLCertVerificationError):
            detail = cause.verify_message or cause.reason or str(cause)
            return SourceError(f"TLS verification of {server} failed: {detail}; check certificate-authority"
                               f"(-data) of cluster {cluster.single.context.cluster!r} in {cluster.origin}")
        if isinstance(cause, ssl.SSLError):
            return SourceError(f"TLS handshake with {server} failed: {cause.reason or cause}")
        if isinstance(cause, ConnectionRefusedError):
            return SourceError(f"cannot reach {server}: connection refused")
        if isinstance(cause, socket.gaierror):
            return SourceError(f"cannot reach {server}: host name does not resolve ({cause.strerror})")
    if isinstance(err, httpx2.ConnectTimeout):
        return SourceError(f"cannot reach {server}: no connection within {timeouts.connect:g} s")
    if isinstance(err, httpx2.TimeoutException):
        return SourceError(f"{server} did not answer GET {path} within {timeouts.read:g} s "
                           "(set KUBEGPU_TIMEOUT=SECONDS to wait longer)")
    if isinstance(err, httpx2.UnsupportedProtocol):
        return SourceError(f"cluster server {server!r} of context {cluster.context} is not an http(s) URL")
    text = " ".join(str(err).split()) or type(err).__name__
    return SourceError(f"cannot reach {server}: {text}")


def credential_error(err: ConfigError | OSError, cluster: ClusterConfig) -> SourceError:
    """Exec credential plugins fail inside the request: name the user and the plugin."""
    if isinstance(err, FileNotFoundError):
        return SourceError(f"credential plugin {err.filename or ''} for user {cluster.user!r} (context "
                           f"{cluster.context}) not found; install it or fix users[].user.exec.command")
    text = " ".join(str(err).split())
    return SourceError(f"credentials for context {cluster.context} could not be obtained: {text}")
