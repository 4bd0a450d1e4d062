"""The audit configuration file: severity overrides, disabled checks, exclusions, parameters.

```yaml
severity: {KG-104: info}          # per-check severity override
disable: [KG-704]                 # checks not run at all
exclude:                          # suppress findings (regexes, full match)
  - checks: [KG-202, "pitfall:3"] # IDs, "pitfall:N" or "*" (default)
    kind: Node
    namespace: "kube-.*"
    name: "gpu-.*"
params: {KG-801: {min_pods: 8}}   # thresholds, see the catalog
```
Objects can also opt out themselves: annotation `kubegpu.io/ignore: KG-101,KG-202` (or `*`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from kubegpu.audit.catalog import CATALOG_BY_ID, CheckInfo
from kubegpu.audit.findings import Severity
from kubegpu.errors import InputError
from kubegpu.model.quantity import parse_quantity
from kubegpu.model.timeutil import parse_duration
from kubegpu.guards.bounded import read_bounded  # bounded in size and, for FIFOs, in time
from kubegpu.guards.safe_yaml import load_yaml_documents
from kubegpu.model.integers import int_or_none

IGNORE_ANNOTATION = "kubegpu.io/ignore"


class Exclusion(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    checks: list[str] = msgspec.field(default_factory=lambda: ["*"])
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None


class AuditConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    severity: dict[str, str] = {}
    disable: list[str] = []
    exclude: list[Exclusion] = []
    params: dict[str, dict[str, Any]] = {}

    def param(self, check: CheckInfo, name: str) -> Any:
        """A check's parameter: the config's value, else the catalog default."""
        override = self.params.get(check.id, {})
        return override.get(name, check.params.get(name))

    def severity_of(self, check: CheckInfo) -> Severity:
        text = self.severity.get(check.id)
        return Severity.parse(text) if text else check.level

    def enabled(self, check: CheckInfo) -> bool:
        return not any(pattern_matches(p, check) for p in self.disable)


def pattern_matches(pattern: str, check: CheckInfo) -> bool:
    """An ID, `pitfall:N` (a whole family) or `*`/`all`."""
    p = pattern.strip()
    if p in ("*", "all"):
        return True
    m = re.fullmatch(r"pitfall[:\-]([0-9]+)", p, re.IGNORECASE)
    if m:
        return int_or_none(m.group(1)) == check.pitfall
    return p.upper() == check.id


def _valid_pattern(p: str) -> bool:
    return p.strip() in ("*", "all") or bool(re.fullmatch(r"pitfall[:\-]([0-9]+)", p.strip(), re.IGNORECASE)) \
        or p.strip().upper() in CATALOG_BY_ID


def _check_patterns(patterns: list[str], *, where: str, field: str) -> None:
    for p in patterns:
        if not _valid_pattern(p):
            raise InputError(f"unknown check {p!r} (see `kubegpu audit --list-checks`)", where=where, field=field)


def parse_config(data: Any, *, where: str = "config") -> AuditConfig:
    """Validate a parsed config document (None or {} is the default config)."""
    try:
        cfg = msgspec.convert(data or {}, AuditConfig)
    except msgspec.ValidationError as err:
        raise InputError(str(err).replace("`", ""), where=where) from None
    for key, value in cfg.severity.items():
        _check_patterns([key], where=where, field=f"severity.{key}")
        try:
            Severity.parse(value)
        except ValueError as err:
            raise InputError(str(err), where=where, field=f"severity.{key}") from None
    _check_patterns(cfg.disable, where=where, field="disable")
    for i, ex in enumerate(cfg.exclude):
        _check_patterns(ex.checks, where=where, field=f"exclude[{i}].checks")
        for attr in ("kind", "namespace", "name"):
            value = getattr(ex, attr)
            if value is not None:
                try:
                    re.compile(value)
                except re.error as err:
                    raise InputError(f"bad regex {value!r}: {err}", where=where,
                                     field=f"exclude[{i}].{attr}") from None
    for key, values in cfg.params.items():
        check = CATALOG_BY_ID.get(key.upper())
        if check is None:
            raise InputError(f"unknown check {key!r}", where=where, field=f"params.{key}")
        for name, value in values.items():
            if name not in check.params:
                known = ", ".join(check.params) or "none"
                raise InputError(f"unknown parameter {name!r} (known: {known})", where=where,
                                 field=f"params.{key}.{name}")
            problem = param_problem(check.params[name], value)
            if problem:
                raise InputError(problem, where=where, field=f"params.{key}.{name}")
    return AuditConfig(severity={k.upper(): v for k, v in cfg.severity.items()}, disable=cfg.disable,
                       exclude=cfg.exclude, params={k.upper(): v for k, v in cfg.params.items()})


def param_problem(default: Any, value: Any) -> str | None:
    """Why `value` cannot stand in for a parameter whose default is `default` (None when it can).

    A parameter of the wrong type would otherwise silently disable its check (`min: soon`).
    """

    if isinstance(default, bool) or isinstance(value, bool):
        return None if isinstance(value, bool) == isinstance(default, bool) else f"expected true or false, got {value!r}"
    if isinstance(default, (int, float)):
        if not isinstance(value, (int, float)) or (isinstance(default, int) and isinstance(value, float)
                                                   and not value.is_integer()):
            return f"expected {'an integer' if isinstance(default, int) else 'a number'}, got {value!r}"
        return None if value >= 0 else f"expected a number >= 0, got {value!r}"
    if isinstance(default, str):
        if parse_duration(default) is not None:
            seconds = parse_duration(str(value)) if isinstance(value, str) else None
            return None if seconds is not None and seconds > 0 else f"expected a duration like {default}, got {value!r}"
        try:
            parse_quantity(default)
        except InputError:
            return None if isinstance(value, str) else f"expected a string, got {value!r}"
        try:
            if parse_quantity(value if isinstance(value, (str, int, float)) else None) < 0:
                return f"expected a quantity >= 0, got {value!r}"
        except InputError:
            return f"expected a quantity like {default}, got {value!r}"
    return None


def load_config(path: str | Path) -> AuditConfig:
    """Read and validate a YAML or JSON config file."""

    raw = read_bounded(path, where=str(path), max_bytes=16 << 20)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", where=str(path)) from None
    docs = [d for d in load_yaml_documents(text, where=str(path)) if d is not None]
    if len(docs) > 1:
        raise InputError("expected one YAML document", where=str(path))
    data = docs[0] if docs else None
    return parse_config(data, where=str(path))


def split_object(ref: str) -> tuple[str, str, str]:
    """'Kind/ns/name' or 'Kind/name' -> (kind, namespace, name)."""
    parts = ref.split("/")
    if len(parts) >= 3:
        return parts[0], parts[1], "/".join(parts[2:])
    if len(parts) == 2:
        return parts[0], "", parts[1]
    return ref, "", ""


def excluded(cfg: AuditConfig, check: CheckInfo, ref: str) -> bool:
    """Whether an exclusion rule of the config covers this check on this object."""
    kind, ns, name = split_object(ref)
    for ex in cfg.exclude:
        if not any(pattern_matches(p, check) for p in ex.checks):
            continue
        if ex.kind is not None and not re.fullmatch(ex.kind, kind):
            continue
        if ex.namespace is not None and not re.fullmatch(ex.namespace, ns):
            continue
        if ex.name is not None and not re.fullmatch(ex.name, name):
            continue
        return True
    return False


def ignored_by_annotation(annotations: dict[str, str], check: CheckInfo) -> bool:
    """`kubegpu.io/ignore: KG-101,pitfall:3` on the object itself."""
    value = annotations.get(IGNORE_ANNOTATION)
    if not value:
        return False
    return any(pattern_matches(p, check) for p in value.split(",") if p.strip())
