"""The example policies are safe to apply as they are, all at once or one by one.

``kubectl apply -f examples/policies/`` makes no two policies conflict: one Active policy
per schedulerName, the others Shadow. Every example keeps the predicates that keep a
placement correct (``policy.SAFEGUARDS``), and changes only what it is about: the
scoring examples filter with the default set, the GPU one adds its label filter to it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from policy_scheduler import names
from policy_scheduler.cli import main
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.kinds import parse_policy_object
from policy_scheduler.policy import missing_safeguards
from policy_scheduler.simulation import load_policy_file
from policy_scheduler.state.policies import ACCEPTED, SHADOW, PolicyBook

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "policies").glob("*.yaml"))


def by_file(paths: list[Path]) -> list[object]:
    return [pytest.param(path, id=path.stem) for path in paths]


def test_applying_the_whole_folder_makes_no_conflict() -> None:
    # As the operator judges them by default: without --allow-default-scheduler.
    book = PolicyBook("policy-scheduler", allow_default_scheduler=False)
    verdicts = {}
    # Created one after the other, in the order kubectl applies a folder (by file name).
    for second, path in enumerate(EXAMPLES):
        raw = yaml.safe_load(path.read_text())
        raw["metadata"] |= {"uid": path.stem, "creationTimestamp": f"2024-01-01T00:00:{second:02}Z"}
        for verdict in book.apply(parse_policy_object(raw)):
            verdicts[verdict.name] = verdict
    assert {name: v.reason for name, v in verdicts.items()} == {
        "bin-packing": ACCEPTED,
        "bin-packing-trial": SHADOW,
        "default": ACCEPTED,
        # kube-scheduler v1.34's default profile as convert writes it, and v1.30's, under
        # names of their own: applying the folder never takes kube-scheduler's pods.
        "policy-scheduler-v134": ACCEPTED,
        "policy-scheduler-v130": ACCEPTED,
        "gpu": ACCEPTED,
        "legacy-v1-13": ACCEPTED,
        "zone-spread": ACCEPTED,
    }
    served = {v.serving: name for name, v in verdicts.items() if v.serving is not None}
    assert served == {
        "bin-packing": "bin-packing",
        "policy-scheduler": "default",
        "policy-scheduler-v134": "policy-scheduler-v134",
        "policy-scheduler-v130": "policy-scheduler-v130",
        "gpu-scheduler": "gpu",
        "legacy-v1-13": "legacy-v1-13",
        "zone-spread": "zone-spread",
    }
    assert verdicts["bin-packing-trial"].shadowing == "policy-scheduler"


def test_simulating_with_the_whole_folder_warns_of_no_unused_policy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["simulate", "-f", str(ROOT / "examples" / "cluster.yaml"), "-o", "summary"]
    for path in EXAMPLES:
        argv += ["-f", str(path)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "warning" not in err, err
    assert "policy 'default': 15/17 pods scheduled" in err


@pytest.mark.parametrize("path", by_file(EXAMPLES))
def test_every_example_keeps_every_safeguard(path: Path) -> None:
    policy = load_policy_file(path)
    assert [guard.name for guard in missing_safeguards(policy.spec)] == []


@pytest.mark.parametrize(
    "path",
    by_file(
        [
            ROOT / "examples" / "policies" / f"{name}.yaml"
            for name in ("bin-packing", "bin-packing-shadow", "zone-spread")
        ]
    ),
)
def test_scoring_examples_filter_as_the_default_policy(path: Path) -> None:
    compiled = compile_policy(load_policy_file(path))
    assert tuple(p.name for p in compiled.predicates) == names.DEFAULT_PREDICATE_ORDER


def test_the_gpu_example_adds_its_label_filter_to_the_default_set() -> None:
    compiled = compile_policy(load_policy_file(ROOT / "examples" / "policies" / "gpu.yaml"))
    predicates = [p.name for p in compiled.predicates]
    assert "AcceleratorLabelRequired" in predicates
    predicates.remove("AcceleratorLabelRequired")
    assert tuple(predicates) == names.DEFAULT_PREDICATE_ORDER
    default_weights = dict(names.DEFAULT_PRIORITY_WEIGHTS)
    weights = {p.name: p.weight for p in compiled.priorities}
    assert weights == {**default_weights, "PreferT4": 5}
