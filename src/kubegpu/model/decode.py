"""Decode raw v1 objects (JSON bytes or parsed dicts) into typed kubegpu structs.

A bad field becomes an InputError that names the object and the JSON path, e.g.
`Pod/ml/train-0: field spec.containers[0].resources: expected object, got str`.
"""

from __future__ import annotations

import re
from typing import Any, Union

import msgspec

from kubegpu.errors import InputError
from kubegpu.model.integers import shown
from kubegpu.model.kinds import GenericObject, KubeObject, Pod, PodDisruptionBudget, PriorityClass, struct_for
from kubegpu.model.quantity import INT32_MAX, INT32_MIN

RawDoc = Union[msgspec.Raw, dict]


class _Head(msgspec.Struct, rename="camel"):
    """Just enough of an object to name it in an error and pick its type."""

    api_version: Any = None
    kind: Any = None
    metadata: Any = None


class _RawHead(msgspec.Struct, rename="camel"):
    api_version: Any = None
    kind: Any = None
    metadata: msgspec.Raw = msgspec.Raw(b"null")


_JSON_HEAD = msgspec.json.Decoder(_RawHead)
_JSON_DECODERS: dict[type, msgspec.json.Decoder] = {}
_PATH = re.compile(r" - at `\$\.?(.*)`$")


def _decoder(t: type) -> msgspec.json.Decoder:
    dec = _JSON_DECODERS.get(t)
    if dec is None:
        dec = _JSON_DECODERS[t] = msgspec.json.Decoder(t)
    return dec


def _head(doc: RawDoc) -> _Head:
    if isinstance(doc, dict):
        return _Head(doc.get("apiVersion"), doc.get("kind"), doc.get("metadata"))
    raw = _JSON_HEAD.decode(doc)
    # metadata is decoded to a dict only when an error needs to name the object
    meta = raw.metadata
    if bytes(memoryview(meta)[:1]) != b"{":
        meta = msgspec.json.decode(meta)
    return _Head(raw.api_version, raw.kind, meta)


def _meta_dict(head: _Head) -> Any:
    if isinstance(head.metadata, msgspec.Raw):
        try:
            head.metadata = msgspec.json.decode(head.metadata)
        except (msgspec.DecodeError, RecursionError):
            head.metadata = None  # metadata that cannot be read: the error names the object as "<unnamed>"
    return head.metadata


def describe(head: _Head) -> str:
    """'Kind/ns/name' from whatever an object header holds, for error messages."""
    kind = head.kind if isinstance(head.kind, str) and head.kind else "object"
    meta = _meta_dict(head)
    meta = meta if isinstance(meta, dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else None
    ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
    if not name:
        name = meta.get("generateName") if isinstance(meta.get("generateName"), str) else "<unnamed>"
    return f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}"


def decode_object(doc: RawDoc, *, where: str | None = None) -> KubeObject:
    """Decode one v1 object; unknown kinds become GenericObject (kept, never fatal)."""
    try:
        head = _head(doc)
    except (msgspec.DecodeError, msgspec.ValidationError) as err:
        raise InputError(f"not a JSON object: {err}", where=where) from None
    except RecursionError:
        raise InputError("object nested too deeply to read", where=where) from None
    if not isinstance(head.kind, str) or not head.kind:
        raise InputError("object has no kind", where=where, obj=describe(head), field="kind")
    if head.metadata is not None and not isinstance(head.metadata, (dict, msgspec.Raw)):
        raise InputError("expected an object", where=where, obj=describe(head), field="metadata")
    struct = struct_for(head.kind, head.api_version)
    try:
        try:
            obj = _decode_as(doc, struct, head)
        except msgspec.ValidationError as err:
            if "got `null`" not in str(err):
                raise
            # the API server writes an unset list or map without omitempty as null (a nil Go slice,
            # e.g. nodeSelectorTerms): null means unset, so read the object again without them
            body = doc if isinstance(doc, dict) else msgspec.json.decode(doc)
            obj = _decode_as(_without_nulls(body), struct, head)
    except msgspec.ValidationError as err:
        text = str(err)
        m = _PATH.search(text)
        field = m.group(1) if m else None
        message = _PATH.sub("", text)
        message = message[0].lower() + message[1:] if message else "invalid value"
        raise InputError(message.replace("`", ""), where=where, obj=describe(head), field=field) from None
    except msgspec.DecodeError as err:  # after ValidationError (a subclass), e.g. a string that is not valid UTF-8
        raise InputError(f"cannot decode: {err}", where=where, obj=describe(head)) from None
    except RecursionError:
        raise InputError("nested too deeply to read", where=where, obj=describe(head)) from None
    if not obj.metadata.name and not obj.metadata.generate_name and struct is not GenericObject:
        raise InputError("object has no name", where=where, obj=describe(head), field="metadata.name")
    _check_ranges(obj, where)
    return obj


def _decode_as(doc: RawDoc, struct: type, head: _Head) -> KubeObject:
    if struct is GenericObject:
        body = doc if isinstance(doc, dict) else msgspec.json.decode(doc)
        obj = msgspec.convert({"apiVersion": body.get("apiVersion", ""), "kind": head.kind,
                               "metadata": body.get("metadata") or {}}, GenericObject)
        obj.body = body
        return obj
    if isinstance(doc, dict):
        return msgspec.convert(doc, struct)
    return _decoder(struct).decode(doc)


def _without_nulls(value: Any) -> Any:
    """A copy with every null-valued key removed from every mapping (null list items stay: an error)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _check_int32(value: object, *, where: str | None, obj: KubeObject, field: str) -> None:
    if isinstance(value, int) and not INT32_MIN <= value <= INT32_MAX:
        raise InputError(f"{value} is out of range for an int32 (the API server stores it as one)",
                         where=where, obj=obj.ref, field=field)


_PERCENT = re.compile(r"[0-9]{1,10}%", re.ASCII)


def _check_int_or_percent(value: object, *, where: str | None, obj: KubeObject, field: str) -> None:
    """upstream ValidatePositiveIntOrPercent + IsNotMoreThan100Percent (a PDB's minAvailable/maxUnavailable)."""
    if value is None:
        return
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            raise InputError(f"{shown(value)}: a valid percent string must be a numeric string followed by an "
                             "ending '%' (upstream IsValidPercent)", where=where, obj=obj.ref, field=field)
        if int(value[:-1]) > 100:
            raise InputError(f"{value!r} must not be greater than 100%", where=where, obj=obj.ref, field=field)
        return
    _check_int32(value, where=where, obj=obj, field=field)
    if value < 0:
        raise InputError(f"{value} must be greater than or equal to 0", where=where, obj=obj.ref, field=field)


def _check_ranges(obj: KubeObject, where: str | None) -> None:
    """Ranges the API server enforces on fields the engines compute with (same rules for every source)."""
    if isinstance(obj, Pod):
        _check_int32(obj.spec.priority, where=where, obj=obj, field="spec.priority")
    elif isinstance(obj, PodDisruptionBudget):
        _check_int_or_percent(obj.spec.min_available, where=where, obj=obj, field="spec.minAvailable")
        _check_int_or_percent(obj.spec.max_unavailable, where=where, obj=obj, field="spec.maxUnavailable")
    elif isinstance(obj, PriorityClass):
        _check_int32(obj.value, where=where, obj=obj, field="value")
