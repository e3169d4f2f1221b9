"""The seed's sample plugin, installed with pip, found, configured, checked and run offline.

The package (``examples/plugins/sample``) is installed into the test environment by the
session fixture, as a user installs it; the scheduler's code never names it. These tests
use it the way its users do: ``validate`` a policy that enables it, ``simulate`` with it,
and read what each of its points did (PreFilter's Skip, Filter's refusals, Score's
scores; PreBind, which ``simulate`` does not run, through the framework's runner).
"""

from __future__ import annotations

import ast
import inspect
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import node
from plugins.installing import ROOT, SAMPLE
from plugins.offline import pending, policy_doc, run, simulate, write
from policy_scheduler import names
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.engine.handles import DetachedHandle
from policy_scheduler.engine.pipeline import run_pre_bind
from policy_scheduler.engine.plugins import PLUGIN_LOAD_FAILED, WRONG_EXTENSION_POINT, plugin_class
from policy_scheduler.objects import Pod, parse_node, parse_pod
from policy_scheduler.policy import INVALID_ARGS, PLUGIN_NOT_FOUND, PolicyError, parse_policy
from policy_scheduler.state.cache import SchedulerCache

EXAMPLE_CLUSTER = "examples/plugins/sample/cluster.yaml"
EXAMPLE_POLICY = "examples/plugins/sample/policy.yaml"


@pytest.fixture(autouse=True)
def _at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


# -- found by its entry point --------------------------------------------------------------


def test_the_sample_is_found_by_its_entry_point_in_the_package_pip_installed() -> None:
    import policy_scheduler_sample

    [entry] = [e for e in entry_points(group=names.PLUGIN_ENTRY_POINT_GROUP) if e.name == "Sample"]
    assert entry.value == "policy_scheduler_sample:Sample"
    assert entry.dist is not None and entry.dist.name == "policy-scheduler-sample"
    assert plugin_class("Sample") is policy_scheduler_sample.Sample
    assert Path(inspect.getfile(policy_scheduler_sample)).is_relative_to(SAMPLE)
    assert names.is_plugin_name("Sample")


def test_the_scheduler_never_names_the_sample_and_the_sample_uses_only_the_public_api() -> None:
    sources = (ROOT / "operator" / "policy_scheduler").rglob("*.py")
    assert not [p for p in sources if "policy_scheduler_sample" in p.read_text()]
    module = SAMPLE / "src" / "policy_scheduler_sample" / "__init__.py"
    imported = {
        node.module
        for node in ast.walk(ast.parse(module.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module
    } | {
        alias.name
        for node in ast.walk(ast.parse(module.read_text()))
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert {m for m in imported if m.startswith("policy_scheduler")} == {
        "policy_scheduler.framework"
    }


# -- configured and validated --------------------------------------------------------------


def sample_spec(args: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"plugins": {"multiPoint": {"enabled": [{"name": "Sample"}]}}, **spec}
    if args is not None:
        out["pluginConfig"] = [{"name": "Sample", "args": args}]
    return out


def test_the_example_policy_is_valid_and_configures_the_plugin(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run(capsys, "validate", EXAMPLE_POLICY)
    assert (ran.code, ran.out) == (0, 'SchedulingPolicy "sample" is valid\n')
    compiled = compile_policy(parse_policy(yaml.safe_load(Path(EXAMPLE_POLICY).read_text())))
    [enabled] = [e for e in compiled.pipeline.pre_bind if e.name == "Sample"]
    assert enabled.plugin.args.model_dump() == {
        "favoriteColor": "#326ce5",
        "favoriteNumber": 7,
        "thanksTo": "Kubernetes",
        "colorLabel": "example.com/color",
        "requiredNodeLabel": "example.com/rack",
    }
    # The same instance at every point it implements; its Score counts twice.
    assert [p.name for p in compiled.pipeline.pre_filter] == ["Sample"]
    assert compiled.pipeline.pre_filter[0].plugin is enabled.plugin
    assert compiled.pipeline.listing()["score"][-1] == {"name": "Sample", "weight": 2}


def test_without_arguments_the_plugin_gets_its_defaults() -> None:
    compiled = compile_policy(parse_policy(policy_doc(sample_spec())))
    [enabled] = [e for e in compiled.pipeline.pre_bind if e.name == "Sample"]
    assert enabled.plugin.args == type(enabled.plugin).Args()


@pytest.mark.parametrize(
    ("spec", "lines", "reason"),
    [
        pytest.param(
            sample_spec({"favoriteNumber": 1000}),
            [
                'SchedulingPolicy "plugins": spec.pluginConfig[0].args.favoriteNumber: input '
                "should be less than or equal to 100, got 1000"
            ],
            INVALID_ARGS,
            id="out-of-range",
        ),
        pytest.param(
            sample_spec({"favoriteNumber": "seven", "favoritColor": "red"}),
            [
                'SchedulingPolicy "plugins": spec.pluginConfig[0].args.favoriteNumber: input '
                "should be a valid integer, unable to parse string as an integer, got 'seven'",
                'SchedulingPolicy "plugins": spec.pluginConfig[0].args.favoritColor: extra '
                "inputs are not permitted",
            ],
            INVALID_ARGS,
            id="wrong-type-and-a-typo",
        ),
        pytest.param(
            # Arguments for a plugin no point runs are checked all the same.
            {"pluginConfig": [{"name": "Sample", "args": {"thanksTo": ""}}]},
            [
                'SchedulingPolicy "plugins": spec.pluginConfig[0].args.thanksTo: string should '
                "have at least 1 character, got ''"
            ],
            INVALID_ARGS,
            id="args-of-a-plugin-not-enabled",
        ),
        pytest.param(
            {"plugins": {"preBind": {"enabled": [{"name": "Sampel"}]}}},
            [
                'SchedulingPolicy "plugins": spec.plugins.preBind.enabled[0].name: no plugin '
                "'Sampel' is installed (`policy-scheduler plugins` lists them)"
            ],
            PLUGIN_NOT_FOUND,
            id="unknown-at-a-point",
        ),
        pytest.param(
            {"predicates": [{"name": "PodFitsResources"}, {"name": "Sampel"}]},
            [
                'SchedulingPolicy "plugins": spec.predicates[1].name: unknown predicate "Sampel" '
                "(did you mean Sample?); a custom predicate needs an argument (labelsPresence or "
                "serviceAffinity); nor is it a plugin's name (`policy-scheduler plugins` lists "
                "those installed)"
            ],
            PLUGIN_NOT_FOUND,
            id="unknown-predicate",
        ),
        pytest.param(
            {"plugins": {"permit": {"enabled": [{"name": "Sample"}]}}},
            [
                'SchedulingPolicy "plugins": spec.plugins.permit.enabled[0].name: plugin '
                "'Sample' does not implement permit (it implements: preFilter, filter, score, "
                "preBind)"
            ],
            WRONG_EXTENSION_POINT,
            id="not-at-that-point",
        ),
        pytest.param(
            {"priorities": [{"name": "TestGate", "weight": 1}]},
            [
                "SchedulingPolicy \"plugins\": spec.priorities[0].name: plugin 'TestGate' does "
                "not implement score (it implements: reserve, permit)"
            ],
            WRONG_EXTENSION_POINT,
            id="a-permit-plugin-as-a-priority",
        ),
        pytest.param(
            {"plugins": {"multiPoint": {"enabled": [{"name": "TestBroken"}]}}},
            [
                'SchedulingPolicy "plugins": spec.plugins.multiPoint.enabled[0].name: plugin '
                "'TestBroken' (policy_scheduler_testplugins.broken:Broken) failed to load: "
                "RuntimeError: this plugin is broken on purpose"
            ],
            PLUGIN_LOAD_FAILED,
            id="fails-to-load",
        ),
    ],
)
def test_a_bad_plugin_configuration_is_refused_naming_the_field(
    spec: dict[str, Any],
    lines: list[str],
    reason: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "policy.yaml", [policy_doc(spec)])
    ran = run(capsys, "validate", path)
    assert ran.code == 1
    assert [line for line in ran.err.splitlines() if line.startswith("SchedulingPolicy")] == lines
    with pytest.raises(PolicyError) as refused:
        compile_policy(parse_policy(policy_doc(spec)))
    assert refused.value.reason == reason


# -- run at each point ---------------------------------------------------------------------


def test_simulate_runs_prefilter_filter_and_score_of_the_example(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run(capsys, "simulate", "-f", EXAMPLE_CLUSTER, "--policy", EXAMPLE_POLICY, "-o", "json")
    assert ran.code == 0
    web, batch, pinned = (ran.decisions[name] for name in ("web-1", "batch-1", "pinned"))
    refused = "node(s) didn't have label example.com/rack (required by plugin Sample)"
    # Filter: the node outside the racks is refused, naming the label and the plugin.
    assert web["failedPredicates"] == {"loose": [refused]}
    # Score: 100 on the favorite color (326ce5), favoriteNumber (7) elsewhere.
    assert {n: s["priorities"]["Sample"] for n, s in web["scores"].items()} == {
        "rack-blue": 100,
        "rack-red": 7,
    }
    assert web["node"] == "rack-blue"
    # PreFilter said Skip for the pod that opts out: its Filter did not run.
    assert (batch["node"], batch["failedPredicates"].get("loose")) == ("loose", None)
    assert pinned["node"] is None
    assert pinned["message"] == (
        f"0/3 nodes are available: 1 {refused}, 2 node(s) didn't match node selector."
    )


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            sample_spec({"requiredNodeLabel": "rack"}),
            id="multiPoint",
        ),
        pytest.param(
            {
                "predicates": [
                    {"name": "PodFitsResources"},
                    {"name": "MatchNodeSelector"},
                    {"name": "Sample"},
                ],
                "priorities": [
                    {"name": "LeastRequestedPriority", "weight": 1},
                    {"name": "Sample", "weight": 1},
                ],
                "pluginConfig": [{"name": "Sample", "args": {"requiredNodeLabel": "rack"}}],
            },
            id="named-as-predicate-and-priority",
        ),
    ],
)
def test_enabled_either_way_the_plugin_filters_and_scores(
    spec: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    objects = [
        node("loose", cpu="16"),
        node("racked", labels={"rack": "r1"}),
        node("blue", labels={"rack": "r2", "example.com/color": "326ce5"}),
        pending("a", 0),
        pending(
            "b",
            1,
            labels={"sample.example.com/skip": "true"},
            node_selector={"kubernetes.io/hostname": "loose"},
        ),
    ]
    ran = simulate(capsys, tmp_path, objects, spec)
    assert ran.code == 0, ran.err
    assert ran.decisions["a"]["node"] == "blue"
    assert ran.decisions["a"]["scores"]["racked"]["priorities"]["Sample"] == 7
    assert ran.decisions["b"]["node"] == "loose"


class RecordingHandle(DetachedHandle):
    """The events a plugin records, kept."""

    def __init__(self) -> None:
        super().__init__()
        self.recorded: list[dict[str, str]] = []

    @property
    def events(self) -> Any:
        return self

    def event(self, pod: Pod, *, type: str, reason: str, message: str, action: str = "") -> None:
        self.recorded.append(
            {"pod": pod.key, "type": type, "reason": reason, "message": message, "action": action}
        )


async def test_prebind_thanks_with_what_prefilter_computed_in_the_same_cycle() -> None:
    handle = RecordingHandle()
    spec = sample_spec({"thanksTo": "the seed", "favoriteNumber": 42})
    compiled = compile_policy(parse_policy(policy_doc(spec)), handle)
    cache = SchedulerCache()
    cache.set_node(parse_node(node("n1")))
    subject = parse_pod(pending("web", 0, requests={"cpu": "500m", "memory": "256Mi"}))
    state = compiled.new_cycle(subject, cache.cluster)  # PreFilter runs here
    assert await run_pre_bind(compiled.pipeline, state, subject, "n1") is None
    assert handle.recorded == [
        {
            "pod": "ns/web",
            "type": "Normal",
            "reason": "Thanks",
            "message": "thanks to the seed: ns/web goes to n1 (favorite color #326ce5, "
            "favorite number 42, requests 500m CPU, 256Mi memory)",
            "action": "PreBind",
        }
    ]
