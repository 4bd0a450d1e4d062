"""One tolerant way to read loosely typed fields (CRDs, flags, ConfigMap data).

Third-party objects (Volcano, Kueue, Karpenter, PrometheusRule, cluster-autoscaler
Deployments) are kept as plain JSON bodies. Their shape is whatever a cluster holds: a field may
be missing (fine: the default), or hold a string where an object belongs. Reading through
`Loose` turns the second case into an InputError that names the object and the field, instead of
an AttributeError deep inside an engine.

    spec = loose(obj).dict("spec")
    min_member = loose(obj).int("spec.minMember", default=1)
"""

from __future__ import annotations

from typing import Any, Iterator

from kubegpu.errors import InputError

_MISSING = object()
_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number",
          bool: "a boolean"}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return _NAMES.get(type(value), type(value).__name__).split(" ", 1)[-1]


def _describe(expect: tuple[type, ...]) -> str:
    return " or ".join(_NAMES.get(t, t.__name__) for t in expect)


def ref_of(obj: Any) -> str:
    """'Kind/ns/name' of a typed object or a raw body."""
    ref = getattr(obj, "ref", None)
    if isinstance(ref, str):
        return ref
    body = obj if isinstance(obj, dict) else getattr(obj, "body", None)
    if not isinstance(body, dict):
        return "object"
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    kind = body.get("kind") if isinstance(body.get("kind"), str) else "object"
    name, ns = meta.get("name"), meta.get("namespace")
    name = name if isinstance(name, str) else "<unnamed>"
    return f"{kind}/{ns}/{name}" if isinstance(ns, str) and ns else f"{kind}/{name}"


def _split(path: str | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(path) if isinstance(path, tuple) else tuple(p for p in path.split(".") if p)


def _join(parts: tuple[str, ...]) -> str:
    return ".".join(f"[{p}]" if "." in p or "/" in p else p for p in parts).replace(".[", "[")


class Loose:
    """A read-only view of a JSON body whose every read checks the shape it expects."""

    def __init__(self, body: Any, ref: str, prefix: tuple[str, ...] = ()) -> None:
        self.body = body
        self.ref = ref
        self.prefix = prefix

    def _walk(self, parts: tuple[str, ...]) -> Any:
        node = self.body
        for i, key in enumerate(parts):
            if node is None:
                return _MISSING
            if not isinstance(node, dict):
                raise InputError(f"expected an object, got {_type_name(node)}", obj=self.ref,
                                 field=_join(self.prefix + parts[:i]) or None)
            if key not in node:
                return _MISSING
            node = node[key]
        return node

    def get(self, path: str | tuple[str, ...], expect: type | tuple[type, ...] = object, default: Any = None) -> Any:
        """The value at `path`; `default` when it (or a parent) is missing or null; InputError on a wrong type."""
        parts = _split(path)
        value = self._walk(parts)
        if value is _MISSING or value is None:
            return default
        types = expect if isinstance(expect, tuple) else (expect,)
        if int in types and float not in types and isinstance(value, float) and value.is_integer():
            value = int(value)
        if object not in types and (not isinstance(value, types) or (bool not in types and isinstance(value, bool))):
            raise InputError(f"expected {_describe(types)}, got {_type_name(value)} {_short(value)}",
                             obj=self.ref, field=_join(self.prefix + parts))
        return value

    def dict(self, path: str | tuple[str, ...]) -> dict:
        return self.get(path, dict, {})

    def list(self, path: str | tuple[str, ...]) -> list:
        return self.get(path, list, [])

    def str(self, path: str | tuple[str, ...], default: str | None = None) -> str | None:
        return self.get(path, str, default)

    def int(self, path: str | tuple[str, ...], default: int | None = None) -> int | None:
        return self.get(path, int, default)

    def number(self, path: str | tuple[str, ...], default: float | None = None) -> float | int | None:
        return self.get(path, (int, float), default)

    def bool(self, path: str | tuple[str, ...], default: bool | None = None) -> bool | None:
        return self.get(path, bool, default)

    def at(self, path: str | tuple[str, ...]) -> "Loose":
        """A view of the object at `path` (an empty one when missing)."""
        parts = _split(path)
        return Loose(self.dict(parts), self.ref, self.prefix + parts)

    def items(self, path: str | tuple[str, ...]) -> Iterator["Loose"]:
        """Views of the objects in the list at `path`; an element that is not an object is an error."""
        parts = _split(path)
        for i, item in enumerate(self.list(parts)):
            where = self.prefix + parts
            if not isinstance(item, dict):
                raise InputError(f"expected an object, got {_type_name(item)} {_short(item)}", obj=self.ref,
                                 field=f"{_join(where)}[{i}]")
            yield Loose(item, self.ref, where[:-1] + (f"{where[-1]}[{i}]",) if where else (f"[{i}]",))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def loose(obj: Any, ref: str | None = None) -> Loose:
    """A Loose view of a GenericObject's body (or any typed object's raw body, or a dict)."""
    body = obj if isinstance(obj, dict) else getattr(obj, "body", None)
    return Loose(body if isinstance(body, dict) else {}, ref or ref_of(obj))
