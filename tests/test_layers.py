"""The layering of STYLE.md holds: model <- scheduling <- engines <- cli/web.

Checked from the source with `ast`: every import statement, also those inside functions and under
`if TYPE_CHECKING:` (an annotation-only import is still a dependency a reader has to follow, and a
circle through annotations is a design circle).
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kubegpu"

# package -> kubegpu packages it must never import
FORBIDDEN = {
    "model": {"sources", "scheduling", "explain", "fragmentation", "defrag", "simulate", "audit", "nccl", "web",
              "cli", "status", "doctor", "modelcache"},
    "scheduling": {"explain", "fragmentation", "defrag", "simulate", "audit", "web", "cli", "doctor", "modelcache",
                   "placement", "storage"},
    "fragmentation": {"defrag", "simulate", "audit", "web", "cli", "doctor"},
    "explain": {"web", "cli", "doctor"},
    "defrag": {"web", "cli", "doctor"},
    "simulate": {"web", "cli", "doctor"},
    "audit": {"web", "cli", "doctor"},
    "nccl": {"web", "cli", "doctor", "scheduling"},
    "sources": {"scheduling", "placement", "explain", "fragmentation", "defrag", "simulate", "audit", "web", "cli", "doctor",
                "modelcache"},
    # the FGD placement model builds on the scheduling core's fit rule; the core never reads it
    "placement": {"explain", "fragmentation", "defrag", "simulate", "audit", "web", "cli", "doctor", "modelcache",
                  "sources"},
    "storage": {"scheduling", "placement", "explain", "fragmentation", "defrag", "simulate", "audit", "web", "cli",
                "doctor", "modelcache", "sources"},
    "guards": {"sources", "scheduling", "placement", "explain", "fragmentation", "defrag", "simulate",
               "audit", "web", "cli", "doctor", "modelcache", "storage"},
    "status": {"web", "cli", "doctor"},
    "doctor": {"web", "cli"},
    "modelcache": {"web", "cli", "doctor"},
    "money": {"web", "cli", "doctor"},
    "sharing": {"web", "cli", "doctor"},
    # the dashboard calls the engines the CLI calls, never the CLI itself (shared JSON text: kubegpu.jsontext)
    "web": {"cli"},
    # the extender is a face like the dashboard: engines and web pieces, never the CLI
    "extender": {"cli", "doctor"},
}
# packages whose imports are an allow-list: module prefixes they may import (besides themselves and
# kubegpu's top-level modules such as errors)
ALLOWED = {
    "modelcache": ("kubegpu.model.", "kubegpu.sources.", "kubegpu.guards.", "kubegpu.storage."),
    # input guards sit below every edge and engine: only errors and the cluster model's integer rules
    "guards": ("kubegpu.model.integers",),
}


def _import_nodes(tree: ast.AST):
    """Every node of the module, `if TYPE_CHECKING:` blocks included."""
    return ast.walk(tree)


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kubegpu."):
            out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("kubegpu."):
                    out.add(alias.name.split(".")[1])
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_respects_layers(package):
    folder = SRC / package
    assert folder.is_dir(), f"{package} is named in the layer rules but absent: update the rules"
    bad = []
    for path in folder.rglob("*.py"):
        hits = imported_packages(path) & FORBIDDEN[package]
        if hits:
            bad.append(f"{path.relative_to(SRC)} imports {sorted(hits)}")
    assert not bad, "\n".join(bad)


def imported_modules(path: Path) -> set[str]:
    """Every kubegpu module named by an import (from-imports name the module, not the imported names)."""
    out = set()
    for node in _import_nodes(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kubegpu."):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("kubegpu."))
    return out


def top_level_modules() -> set[str]:
    return {f"kubegpu.{p.stem}" for p in SRC.glob("*.py") if p.stem != "__init__"}


def disallowed(package: str, modules: set[str], top: set[str]) -> set[str]:
    """The modules of `modules` that `package` may not import under its allow-list."""
    own = f"kubegpu.{package}"
    return {m for m in modules if not (m == own or m.startswith(own + ".") or m in top
                                       or any(m == a.rstrip(".") or m.startswith(a) for a in ALLOWED[package]))}


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_what_it_is_allowed(package):
    folder = SRC / package
    assert folder.is_dir(), f"{package} is named in the layer rules but absent: update the rules"
    top = top_level_modules()
    bad = [f"{path.relative_to(SRC)} imports {sorted(hits)}" for path in folder.rglob("*.py")
           if (hits := disallowed(package, imported_modules(path), top))]
    assert not bad, "\n".join(bad)


def test_allow_list_check_sees_a_disallowed_import(tmp_path):
    module = tmp_path / "x.py"
    module.write_text("import kubegpu.errors\ndef f():\n    from kubegpu.fragmentation.report import FragReport\n"
                      "    from kubegpu.storage.throughput import CLASSES\n    from kubegpu.audit.engine import run_audit\n")
    modules = imported_modules(module)
    assert modules == {"kubegpu.errors", "kubegpu.fragmentation.report", "kubegpu.storage.throughput",
                       "kubegpu.audit.engine"}
    assert disallowed("modelcache", modules, {"kubegpu.errors"}) == {"kubegpu.fragmentation.report", "kubegpu.audit.engine"}


# Imports live at the top of a module (STYLE.md). The exceptions, each for start-up time: the CLI's
# lazy command registry (cli/main.py), and heavy optional libraries that only some paths need (each
# such import carries a "lazy:" comment saying why).
LAZY_PACKAGES = {"cli"}
LAZY_LIBRARIES = {"matplotlib", "scipy", "dask", "distributed", "rich", "uvicorn", "pulp", "highspy", "playwright"}


def function_level_imports(path: Path) -> list[tuple[int, str, int]]:
    """(line, module, line of the enclosing function) of every import statement inside a function."""
    out = []

    def visit(node: ast.AST, function: int | None) -> None:
        for child in ast.iter_child_nodes(node):
            if function is not None and isinstance(child, ast.ImportFrom):
                out.append((child.lineno, "." * child.level + (child.module or ""), function))
            elif function is not None and isinstance(child, ast.Import):
                out.extend((child.lineno, a.name, function) for a in child.names)
            is_function = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, child.lineno if is_function and function is None else function)

    visit(ast.parse(path.read_text(), filename=str(path)), None)
    return out


def misplaced_imports(path: Path) -> list[str]:
    """Function-level imports that are not a heavy library, or one without a "lazy" comment above it
    in its function."""
    lines = path.read_text().splitlines()
    name = path.relative_to(SRC) if path.is_relative_to(SRC) else path.name
    out = []
    for line, module, function in function_level_imports(path):
        if module.split(".")[0] not in LAZY_LIBRARIES:
            out.append(f"{name}:{line} imports {module}")
        elif "lazy" not in "\n".join(lines[function - 1:line]):
            out.append(f"{name}:{line} imports {module} without a 'lazy:' comment saying why")
    return out


def test_imports_are_at_the_top_of_modules():
    bad = [hit for path in sorted(SRC.rglob("*.py")) if path.relative_to(SRC).parts[0] not in LAZY_PACKAGES
           for hit in misplaced_imports(path)]
    assert not bad, "move these imports to the top of their module (or say why they are lazy):\n" + "\n".join(bad)


def test_function_level_import_check_sees_one(tmp_path):
    module = tmp_path / "x.py"
    module.write_text("import os\n\ndef f():\n    import matplotlib  # lazy: plots only\n"
                      "    from matplotlib.figure import Figure\n    from kubegpu.errors import InputError\n\n"
                      "class C:\n    def m(self):\n        from . import sibling\n        import scipy\n")
    assert function_level_imports(module) == [(4, "matplotlib", 3), (5, "matplotlib.figure", 3),
                                              (6, "kubegpu.errors", 3), (10, ".", 9), (11, "scipy", 9)]
    assert misplaced_imports(module) == ["x.py:6 imports kubegpu.errors", "x.py:10 imports .",
                                         "x.py:11 imports scipy without a 'lazy:' comment saying why"]


def test_package_does_not_read_shared_at_run_time():
    offenders = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if "shared/" in p.read_text()
                 and "../shared" in p.read_text()]
    assert not offenders, offenders


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """kubegpu module -> kubegpu modules it imports (function-level and TYPE_CHECKING imports too)."""
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in _import_nodes(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kubegpu"):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    deps.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("kubegpu")}
        graph[name] = {d for d in deps if d in modules and d != name and not name.startswith(d + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycles_between_modules():
    """No two modules import each other, directly or around a loop (e.g. placement <->
    fragmentation, explain.report <-> explain.remedies)."""
    found = cycles(import_graph())
    assert not found, "\n".join(" -> ".join(c) for c in found)


def test_type_checking_imports_count(tmp_path):
    module = tmp_path / "x.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kubegpu.cli.main import cli\n")
    assert imported_packages(module) == {"cli"}


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
