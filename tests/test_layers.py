"""The layering of STYLE.md holds: model <- scheduling <- engines <- cli/web.

Checked from the source with `ast` (every import statement, also those inside functions).
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kubegpu"

# package -> kubegpu packages it must never import
FORBIDDEN = {
    "model": {"sources", "scheduling", "explain", "fragmentation", "defrag", "simulate", "audit", "nccl", "web",
              "cli", "status", "doctor"},
    "scheduling": {"explain", "defrag", "simulate", "audit", "web", "cli", "doctor"},
    "fragmentation": {"defrag", "simulate", "audit", "web", "cli", "doctor"},
    "explain": {"web", "cli", "doctor"},
    "defrag": {"web", "cli", "doctor"},
    "simulate": {"web", "cli", "doctor"},
    "audit": {"web", "cli", "doctor"},
    "nccl": {"web", "cli", "doctor", "scheduling"},
    "sources": {"scheduling", "explain", "fragmentation", "defrag", "simulate", "audit", "web", "cli", "doctor"},
    "status": {"web", "cli", "doctor"},
    "doctor": {"web", "cli"},
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = set()
    for node in ast.walk(tree):
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
    if not folder.exists():
        pytest.skip(f"{package} not present")
    bad = []
    for path in folder.rglob("*.py"):
        hits = imported_packages(path) & FORBIDDEN[package]
        if hits:
            bad.append(f"{path.relative_to(SRC)} imports {sorted(hits)}")
    assert not bad, "\n".join(bad)


def test_package_does_not_read_shared_at_run_time():
    offenders = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if "shared/" in p.read_text()
                 and "../shared" in p.read_text()]
    assert not offenders, offenders
