"""PodGroups as the scheduler reads them: parsed, kept, served to plugins, waking members;
and the CRD that serves them, as scheduler-plugins ships it."""

from __future__ import annotations

import copy
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from builders import node, pod
from chart.crdcheck import CHART, ROOT, openapi_schema, schema_errors
from chart.rendering import K8S_VERSION, NAMESPACE, RELEASE, Rendered
from coscheduling.gangs import member, pod_group
from fakes import FakeClock
from policy_scheduler.kinds import POD_GROUP, kind_of
from policy_scheduler.objects import ObjectError, PodGroup, parse_pod_group, resources
from policy_scheduler.state.cache import SchedulerCache
from policy_scheduler.state.queueing import SchedulingQueue
from policy_scheduler.state.world import DELETED, World

CRD_FILE = ROOT / "crds" / "scheduling.x-k8s.io_podgroups.yaml"
CHART_FILE = CHART / "files" / "scheduling.x-k8s.io_podgroups.yaml"

#: A PodGroup as scheduler-plugins' docs write one (doc/install.md, Coscheduling).
UPSTREAM_EXAMPLE = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: nginx
  namespace: default
spec:
  scheduleTimeoutSeconds: 10
  minMember: 3
  minResources:
    cpu: "3"
    memory: 300Mi
    nvidia.com/gpu: 1
"""


# -- parsing ----------------------------------------------------------------------------------


def test_a_scheduler_plugins_manifest_parses() -> None:
    raw = yaml.safe_load(UPSTREAM_EXAMPLE)
    assert kind_of(raw) is POD_GROUP
    group = parse_pod_group(raw)
    assert group == PodGroup(
        namespace="default",
        name="nginx",
        min_member=3,
        min_resources=resources(3000, 300 * 2**20, scalar={"nvidia.com/gpu": 1}),
        schedule_timeout_seconds=10,
    )
    assert group.key == "default/nginx"


def test_status_is_read() -> None:
    group = parse_pod_group(
        pod_group(
            "g",
            2,
            status={
                "phase": "Running",
                "running": 2,
                "succeeded": 1,
                "failed": 0,
                "scheduleStartTime": "2024-05-01T00:00:05Z",
                "occupiedBy": "default/job",
            },
        )
    )
    assert (group.phase, group.running, group.succeeded, group.failed) == ("Running", 2, 1, 0)
    assert (group.schedule_start_time, group.occupied_by) == ("2024-05-01T00:00:05Z", "default/job")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        pytest.param(
            lambda g: g["spec"].update(minMember="3"),
            "PodGroup \"default/g\": spec.minMember: must be an integer, got '3'",
            id="minMember-a-string",
        ),
        pytest.param(
            lambda g: g["spec"].update(minMember=-1),
            'PodGroup "default/g": spec.minMember: must not be negative, got -1',
            id="minMember-negative",
        ),
        pytest.param(
            lambda g: g["spec"].update(minResources={"cpu": "lots"}),
            "PodGroup \"default/g\": spec.minResources.cpu: not a quantity: 'lots'",
            id="minResources-not-a-quantity",
        ),
        pytest.param(
            lambda g: g["spec"].update(scheduleTimeoutSeconds=2**40),
            'PodGroup "default/g": spec.scheduleTimeoutSeconds: must be a 32-bit integer '
            "(-2147483648..2147483647), got 1099511627776",
            id="timeout-beyond-int32",
        ),
    ],
)
def test_a_malformed_pod_group_is_refused_naming_the_field(edit: Any, message: str) -> None:
    raw = pod_group("g", 2)
    edit(raw)
    with pytest.raises(ObjectError) as caught:
        parse_pod_group(raw)
    assert str(caught.value) == message


# -- kept, and served to plugins ----------------------------------------------------------------


def test_the_world_keeps_pod_groups_and_plugins_read_them_from_the_snapshot() -> None:
    world = World()
    world.observe("ADDED", pod_group("g", 2))
    snapshot = world.handle.snapshot()
    groups = snapshot.objects("PodGroup")
    assert groups["default/g"].min_member == 2
    with pytest.raises(TypeError):
        groups["default/h"] = groups["default/g"]  # type: ignore[index]
    world.observe(DELETED, pod_group("g", 2))
    assert "default/g" not in world.handle.snapshot().objects("PodGroup")


def test_the_snapshot_names_the_kinds_it_serves() -> None:
    with pytest.raises(KeyError, match=r"holds no 'Secret' objects.*PodGroup"):
        World().handle.snapshot().objects("Secret")


def test_pending_pods_are_the_queues_not_the_placed_ones() -> None:
    world = World(default_scheduler_name="policy-scheduler")
    world.observe("ADDED", node("n1"))
    for raw in (
        member("g-1", "g", node_name="n1"),
        member("g-2", "g"),
        member("plain", None),
        member("g-3", "g", namespace="other"),
    ):
        world.observe("ADDED", raw)
    popped = world.queue.pop_nowait()  # being scheduled: still pending
    assert popped is not None
    snapshot = world.handle.snapshot()
    label = {"scheduling.x-k8s.io/pod-group": "g"}
    assert sorted(p.name for p in snapshot.pending_pods()) == ["g-2", "g-3", "plain"]
    assert [p.name for p in snapshot.pending_pods("default", labels=label)] == ["g-2"]
    assert [p.name for p in snapshot.pods("default", labels=label)] == ["g-1"]


# -- queueing hints -----------------------------------------------------------------------------


def unschedulable_member() -> tuple[World, FakeClock, str]:
    clock = FakeClock()
    world = World(
        default_scheduler_name="policy-scheduler",
        cache=SchedulerCache(clock=clock),
        queue=SchedulingQueue(clock=clock),
    )
    waiting = member("g-1", "g")
    world.observe("ADDED", waiting)
    queued = world.queue.pop_nowait()
    assert queued is not None
    world.queue.unschedulable(queued)
    clock.now += 5
    uid = waiting["metadata"]["uid"]
    assert world.queue.where(uid) == "unschedulable"
    return world, clock, uid


@pytest.mark.parametrize(
    ("events", "wakes"),
    [
        pytest.param([("ADDED", pod_group("g", 2))], True, id="its PodGroup added"),
        pytest.param(
            [("ADDED", pod_group("g", 2)), ("MODIFIED", pod_group("g", 1))],
            True,
            id="its PodGroup changed",
        ),
        pytest.param([("ADDED", pod_group("h", 2))], False, id="another PodGroup"),
        pytest.param(
            [("ADDED", pod_group("g", 2, namespace="other"))],
            False,
            id="a PodGroup of that name elsewhere",
        ),
        pytest.param([("ADDED", member("g-2", "g"))], True, id="a new member"),
        pytest.param([("ADDED", member("h-1", "h"))], False, id="another group's member"),
        pytest.param([("ADDED", pod("plain"))], False, id="a pod in no group"),
    ],
)
def test_which_changes_wake_a_gang_member(events: list[tuple[str, Any]], wakes: bool) -> None:
    world, _, uid = unschedulable_member()
    for event_type, raw in events:
        world.observe(event_type, copy.deepcopy(raw))
    assert world.queue.where(uid) == ("active" if wakes else "unschedulable")


# -- the CRD --------------------------------------------------------------------------------------


def test_the_chart_installs_the_same_crd_file() -> None:
    assert CHART_FILE.read_bytes() == CRD_FILE.read_bytes(), (
        "copy crds/scheduling.x-k8s.io_podgroups.yaml to charts/policy-scheduler/files/"
    )


def test_the_crd_is_valid_and_as_scheduler_plugins_serves_it() -> None:
    crd = yaml.safe_load(CRD_FILE.read_text())
    kubernetes_validate.validate(crd, K8S_VERSION, strict=True)
    assert crd["metadata"]["name"] == "podgroups.scheduling.x-k8s.io"
    assert crd["spec"]["names"]["shortNames"] == ["pg", "pgs"]
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["subresources"]) == ("v1alpha1", {"status": {}})
    columns = [column["name"] for column in version["additionalPrinterColumns"]]
    assert columns == ["Phase", "MinMember", "Running", "Succeeded", "Failed", "Age"]


@pytest.mark.parametrize(
    ("edit", "errors"),
    [
        pytest.param(lambda g: None, [], id="the upstream example"),
        pytest.param(
            lambda g: g["spec"].update(minMember=0),
            [("spec.minMember", "0 is less than the minimum of 1")],
            id="minMember-0",
        ),
        pytest.param(
            lambda g: g["spec"]["minResources"].update(cpu="lots"),
            [("spec.minResources.cpu", "'lots' does not match")],
            id="a-bad-quantity",
        ),
    ],
)
def test_the_crd_schema_accepts_what_scheduler_plugins_accepts(
    edit: Any, errors: list[tuple[str, str]]
) -> None:
    raw = yaml.safe_load(UPSTREAM_EXAMPLE)
    edit(raw)
    schema = openapi_schema(yaml.safe_load(CRD_FILE.read_text()))
    found = schema_errors(schema, raw)
    # jsonschema's messages go on with the pattern: compared up to what is expected.
    assert len(found) == len(errors)
    for (path, message), (want_path, want) in zip(found, errors, strict=True):
        assert (path, message[: len(want)]) == (want_path, want)


@pytest.mark.parametrize(("install", "count"), [(True, 1), (False, 0)])
def test_a_value_turns_the_crd_off_and_helm_keeps_it_on_uninstall(
    install: bool, count: int
) -> None:
    chart = helm.Chart.load(CHART)
    out = Rendered(
        chart.render(
            {"podGroups": {"installCRD": install}},
            name=RELEASE,
            namespace=NAMESPACE,
            is_install=True,
        )
    )
    found = out.all("CustomResourceDefinition")
    assert len(found) == count
    if found:
        (crd,) = found
        shipped = yaml.safe_load(CRD_FILE.read_text())
        assert crd["spec"] == shipped["spec"]
        assert crd["metadata"]["annotations"] == {
            **shipped["metadata"]["annotations"],
            "helm.sh/resource-policy": "keep",
        }
