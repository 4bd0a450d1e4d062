"""The README opens with the two commands, and CI runs exactly the README's test command."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def code_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_readme_opens_with_install_and_demo_then_tests():
    blocks = code_blocks((ROOT / "README.md").read_text())
    assert "kubegpu doctor --demo" in blocks[0] and "pip install" in blocks[0]
    assert "pytest" in blocks[1]


def test_ci_runs_the_readme_test_command():
    test_command = code_blocks((ROOT / "README.md").read_text())[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci.splitlines()


def test_every_documented_doc_exists():
    text = (ROOT / "README.md").read_text()
    for link in re.findall(r"\]\(((?:docs|deploy)/[^)]+)\)", text):
        assert (ROOT / link).exists(), link


def test_install_and_test_commands_use_the_same_virtual_environment():
    """PEP 668: a stock Debian/Ubuntu python3 refuses `pip install` outside a venv, so both make and use one."""
    install, tests = code_blocks((ROOT / "README.md").read_text())[:2]
    setup = "python3 -m venv .venv && . .venv/bin/activate && "
    assert install.startswith(setup) and tests.startswith(setup)
