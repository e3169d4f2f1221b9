"""docs/policy-reference.md cannot fall behind the code.

The page must name every built-in predicate and priority (``names.py``), every argument
kind, and quote every failure reason the predicate modules define, word for word; its
default-policy section must list ``names.DEFAULT_PREDICATE_ORDER`` in order and
``names.DEFAULT_PRIORITY_WEIGHTS`` with their weights, and its rank table must be
``names.LEGACY_PREDICATE_ORDER``.

Which module constants are failure reasons? The predicate modules use two conventions:
``ERR_*`` names (general, taints, labels, spreading) and plain names beside the
predicate (``POD_AFFINITY_NOT_MATCH`` in interpod, ``DISK_CONFLICT`` in volumes). What
they share is the value: a reason is a sentence a user reads ("node(s) ...",
"Insufficient cpu", "pod has unbound immediate PersistentVolumeClaims"), while the other
string constants are identifiers (condition types, effects, label keys, memo keys,
annotation names) with no space. So a reason constant is a module-level ``str`` constant
named ``ERR_*`` or ``*_REASON``, or whose value contains a space. The test below also
checks this rule finds the reasons we know, so a rule that silently matches nothing
fails.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

from policy_scheduler import names, objects
from policy_scheduler.engine import catalogue
from policy_scheduler.runtime import binding, observing
from policy_scheduler.state import policies as policy_book

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "policy-reference.md"
TROUBLESHOOTING = ROOT / "docs" / "troubleshooting.md"
PREDICATES_DIR = ROOT / "operator" / "policy_scheduler" / "engine" / "predicates"


@pytest.fixture(scope="module")
def page() -> str:
    return PAGE.read_text()


def predicate_modules() -> list[ModuleType]:
    """Every module under engine/predicates/ (not only those the catalogue lists)."""
    return [
        importlib.import_module(f"policy_scheduler.engine.predicates.{path.stem}")
        for path in sorted(PREDICATES_DIR.glob("*.py"))
        if path.stem != "__init__"
    ]


def module_constant_names(module: ModuleType) -> list[str]:
    """Names assigned at the top level of the module's source."""
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    found: list[str] = []
    for statement in tree.body:
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = list(statement.targets)
        elif isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        found += [t.id for t in targets if isinstance(t, ast.Name)]
    return found


def is_reason(name: str, value: object) -> bool:
    if not isinstance(value, str):
        return False
    return name.startswith("ERR_") or name.endswith("_REASON") or " " in value


def reason_constants() -> list[tuple[str, str]]:
    """(module.CONSTANT, text) of every failure reason constant of the predicate modules
    (and of volumenames, which holds the volume predicates' words)."""
    out: list[tuple[str, str]] = []
    for module in [*predicate_modules(), importlib.import_module("policy_scheduler.volumenames")]:
        for name in module_constant_names(module):
            value = getattr(module, name)
            if is_reason(name, value):
                out.append((f"{module.__name__.rsplit('.', 1)[1]}.{name}", value))
    return out


def test_every_predicate_module_is_in_the_catalogue() -> None:
    # Otherwise a family could define reasons that no policy can ever produce.
    listed = {m.__name__ for m in catalogue.FAMILIES}
    for module in predicate_modules():
        assert module.__name__ in listed


def test_the_reason_rule_finds_the_known_reasons() -> None:
    texts = {text for _, text in reason_constants()}
    known = {
        "Insufficient cpu",
        "node(s) didn't match node selector",
        "node(s) had taints that the pod didn't tolerate",
        "node(s) didn't have the requested labels",
        "node(s) didn't match pod affinity/anti-affinity",
        "node(s) didn't match pod topology spread constraints",
        "node(s) exceed max volume count",
        "pod has unbound immediate PersistentVolumeClaims",
    }
    assert known <= texts
    # ... and no identifier slipped in.
    assert "Ready" not in texts and "NoSchedule" not in texts


@pytest.mark.parametrize(("constant", "text"), reason_constants())
def test_every_failure_reason_is_quoted_exactly(page: str, constant: str, text: str) -> None:
    assert f"`{text}`" in page, f"{constant} = {text!r} is not quoted in {PAGE.name}"


@pytest.mark.parametrize("name", sorted(names.BUILTIN_PREDICATES))
def test_every_builtin_predicate_is_documented(page: str, name: str) -> None:
    assert f"`{name}`" in page or f"**{name}**" in page


@pytest.mark.parametrize("name", sorted(names.BUILTIN_PRIORITIES))
def test_every_builtin_priority_is_documented(page: str, name: str) -> None:
    assert f"`{name}`" in page


@pytest.mark.parametrize(
    "kind", sorted(set(names.PREDICATE_ARGUMENT_KINDS) | set(names.PRIORITY_ARGUMENT_KINDS))
)
def test_every_argument_kind_is_documented(page: str, kind: str) -> None:
    assert f"`{kind}`" in page


@pytest.mark.parametrize(("alias", "builtin"), sorted(names.PREDICATE_ALIASES.items()))
def test_aliases_are_documented_with_what_they_mean(page: str, alias: str, builtin: str) -> None:
    assert re.search(rf"`{builtin}` \(alias `{alias}`\)", page)


def section(page: str, title: str) -> str:
    start = page.index(f"\n## {title}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else len(page)]


def test_default_predicates_are_listed_in_their_order(page: str) -> None:
    listed = re.findall(r"^\d+\. `(\w+)`(?: — .*)?$", section(page, "The default policy"), re.M)
    assert tuple(listed) == names.DEFAULT_PREDICATE_ORDER


def test_default_priorities_are_listed_with_their_weights(page: str) -> None:
    rows = re.findall(r"^\| `(\w+)` \| (\d+) \|$", section(page, "The default policy"), re.M)
    assert tuple((name, int(weight)) for name, weight in rows) == names.DEFAULT_PRIORITY_WEIGHTS


def test_the_rank_table_is_the_legacy_fixed_order(page: str) -> None:
    cells = re.findall(r"\| (\d+) \| `(\w+)`", section(page, "Evaluation order"))
    ranks = {name: int(rank) for rank, name in cells}
    assert ranks == {name: i for i, name in enumerate(names.LEGACY_PREDICATE_ORDER)}


def test_the_numbers_the_page_quotes(page: str) -> None:
    assert objects.DEFAULT_MILLI_CPU_REQUEST == 100
    assert objects.DEFAULT_MEMORY_REQUEST == 200 * 1024 * 1024
    assert "100m" in page and "200Mi" in page
    assert f"< {names.MAX_WEIGHT}`" in page
    assert names.MAX_PRIORITY == 10


def test_the_reasons_the_operator_writes_are_in_the_troubleshooting_guide() -> None:
    text = TROUBLESHOOTING.read_text()
    for reason in (
        observing.NO_POLICY_REASON,
        binding.SCHEDULER_ERROR_REASON,
        policy_book.ACCEPTED,
        policy_book.INVALID,
        policy_book.CONFLICT,
        "Unschedulable",
        "FailedScheduling",
        "PolicyRejected",
    ):
        assert f"`{reason}`" in text, reason
