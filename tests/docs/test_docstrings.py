"""Every module says how it works and every public class what it is (STYLE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "operator" / "policy_scheduler"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_and_public_classes_have_docstrings(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert ast.get_docstring(tree), "module docstring"
    missing = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and not node.name.startswith("_")
        and ast.get_docstring(node) is None
    ]
    assert missing == []
