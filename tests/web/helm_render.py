"""A renderer for the small Go-template subset the kubegpu chart uses (no helm binary here).

Supported: `{{ .Values.x.y }}`, `.Release.*`, `.Chart.*`, `.Files.Get "path"`, string and integer
literals; pipes to quote, default, toYaml, nindent, indent; `if`/`else`/`end`; `{{-`/`-}}` trimming.
Anything else raises, so the chart cannot drift into syntax this renderer would get wrong.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

ACTION = re.compile(r"{{(-?)\s*(.*?)\s*(-?)}}", re.S)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    for m in ACTION.finditer(text):
        chunk = text[pos:m.start()]
        if m.group(1):
            chunk = chunk.rstrip()
        out.append(("text", chunk))
        out.append(("action", m.group(2)))
        pos = m.end()
        if m.group(3):
            rest = text[pos:]
            pos += len(rest) - len(rest.lstrip())
    out.append(("text", text[pos:]))
    return out


def _to_yaml(value: Any) -> str:
    if value in ({}, [], None):
        return "{}" if value == {} else ("[]" if value == [] else "null")
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False, width=1000).rstrip("\n")


class Renderer:
    def __init__(self, chart: Path, values: dict, release: str = "kubegpu", namespace: str = "kubegpu") -> None:
        self.chart = chart
        meta = yaml.safe_load((chart / "Chart.yaml").read_text())
        self.scope = {"Values": values, "Release": {"Name": release, "Namespace": namespace, "Service": "Helm"},
                      "Chart": {"Name": meta["name"], "Version": meta["version"], "AppVersion": meta["appVersion"]}}

    def _arg(self, word: str) -> Any:
        if word.startswith('"'):
            return json.loads(word)
        if word.isdigit():
            return int(word)
        if word.startswith("."):
            cur: Any = self.scope
            for part in word[1:].split("."):
                cur = cur.get(part) if isinstance(cur, dict) else None
            return cur
        raise ValueError(f"unsupported template argument {word!r}")

    def _pipeline(self, expr: str) -> Any:
        stages = [shlex.split(s, posix=False) for s in expr.split("|")]
        head = stages[0]
        if head[:1] == [".Files.Get"]:
            value = (self.chart / json.loads(head[1])).read_text()
            value = "\n".join(line for line in value.splitlines() if not line.startswith("#")).rstrip("\n")
        elif head[0] == "toYaml":
            value = _to_yaml(self._arg(head[1]))
        elif len(head) == 1:
            value = self._arg(head[0])
        else:
            raise ValueError(f"unsupported expression {expr!r}")
        for fn, *args in stages[1:]:
            if fn == "quote":
                value = json.dumps("" if value is None else str(value))
            elif fn == "default":
                value = value if value not in (None, "", 0, False, [], {}) else self._arg(args[0])
            elif fn == "toYaml":
                value = _to_yaml(value)
            elif fn in ("nindent", "indent"):
                pad = " " * int(args[0])
                value = ("\n" if fn == "nindent" else "") + "\n".join(pad + line if line else line
                                                                       for line in str(value).split("\n"))
            else:
                raise ValueError(f"unsupported function {fn!r}")
        return value

    def render_text(self, text: str) -> str:
        out: list[str] = []
        stack: list[tuple[bool, bool]] = []   # (this branch on, parent on)
        on = True
        for kind, body in _tokens(text):
            if kind == "text":
                if on:
                    out.append(body)
                continue
            if body.startswith("/*"):
                continue
            word = body.split(None, 1)
            if word[0] == "if":
                stack.append((on, on))
                on = on and bool(self._pipeline(word[1]))
                stack[-1] = (on, stack[-1][1])
            elif word[0] == "else":
                branch, parent = stack[-1]
                on = parent and not branch
                stack[-1] = (True, parent)
            elif word[0] == "end":
                on = stack.pop()[1]
            elif on:
                value = self._pipeline(body)
                out.append("" if value is None else str(value).lower() if isinstance(value, bool) else str(value))
        if stack:
            raise ValueError("unclosed if")
        return "".join(out)

    def render(self) -> dict[str, str]:
        """template file name -> rendered text (NOTES.txt included)."""
        return {p.name: self.render_text(p.read_text()) for p in sorted((self.chart / "templates").iterdir())}


def merged_values(chart: Path, override: dict) -> dict:
    def merge(base: Any, over: Any) -> Any:
        if isinstance(base, dict) and isinstance(over, dict):
            return {**base, **{k: merge(base.get(k), v) for k, v in over.items()}}
        return over
    return merge(yaml.safe_load((chart / "values.yaml").read_text()), override or {})


def manifests(chart: Path, override: dict) -> list[dict]:
    """Every Kubernetes object the chart renders for these values."""
    docs = []
    for name, text in Renderer(chart, merged_values(chart, override)).render().items():
        if name.endswith(".yaml"):
            docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs
