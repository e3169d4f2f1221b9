"""Pod-level resources (``spec.resources``, beta and on in kube-scheduler v1.34) through
``simulate``: where the pod lands, the ``Insufficient cpu`` reason, the fit hint, under
the built-in default policy (the legacy predicates and priorities) and a v1
KubeSchedulerConfiguration (NodeResourcesFit and its scores); and the pods an API server
refuses, skipped with a one-line note naming the field.

The NodeResourcesFit filter rows of v1.34's TestEnoughRequests are in
``tests/intree/test_noderesources.py`` (``POD_LEVEL_REQUESTS``, also run through
``simulate --config``); the scores in ``POD_LEVEL_SCORES`` there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import container, node, pod
from policy_scheduler.cli import main
from policy_scheduler.objects import ObjectError, parse_pod

V1_CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *objects: Any, config: bool
) -> dict[str, dict[str, Any]]:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(list(objects)))
    argv = ["simulate", "-f", str(path), "-o", "json"]
    if config:
        conf = tmp_path / "config.yaml"
        conf.write_text(yaml.safe_dump(V1_CONFIG))
        argv += ["--config", str(conf)]
    else:
        argv += ["--scheduler-name", "default-scheduler"]
    assert main(argv) == 0
    return {d["pod"]: d for d in json.loads(capsys.readouterr().out)["decisions"]}


def level_pod(name: str, requests: dict[str, str], **kwargs: Any) -> dict[str, Any]:
    """A pod whose one container asks 100m; ``spec.resources.requests`` the rest."""
    obj = pod(name, requests={"cpu": "100m", "memory": "64Mi"}, **kwargs)
    obj["spec"]["resources"] = {"requests": requests}
    return obj


@pytest.mark.parametrize("config", [False, True], ids=["default-policy", "v1-config"])
def test_the_pod_level_request_decides_where_the_pod_lands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: bool
) -> None:
    # n1 has 1 of its 2 cpus free, n2 all 4: 100m would fit both, 3 cpus n2 only.
    decisions = simulate(
        tmp_path,
        capsys,
        node("n1", cpu="2"),
        pod("batch", node_name="n1", requests={"cpu": "1"}),
        node("n2", cpu="4"),
        level_pod("web", {"cpu": "3"}),
        config=config,
    )
    web = decisions["default/web"]
    assert web["node"] == "n2"
    assert web["failedPredicates"] == {"n1": ["Insufficient cpu"]}
    # The least-requested score reads 3 cpus of 4 (and the container's 64Mi of 8Gi):
    # legacy (2 + 9) // 2, v1.34 (25 + 99) // 2; 100m would score 9 and 98.
    priorities = web["scores"]["n2"]["priorities"]
    if config:
        assert priorities["NodeResourcesFit"] == 62
    else:
        assert priorities["LeastRequestedPriority"] == 5


@pytest.mark.parametrize("config", [False, True], ids=["default-policy", "v1-config"])
def test_a_placed_pods_pod_level_request_fills_its_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: bool
) -> None:
    placed = level_pod("batch", {"cpu": "1500m"}, node_name="n1")
    decisions = simulate(
        tmp_path,
        capsys,
        node("n1", cpu="2"),
        placed,
        node("n2", cpu="2"),
        pod("web", requests={"cpu": "1"}),
        config=config,
    )
    assert decisions["default/web"]["node"] == "n2"
    assert decisions["default/web"]["failedPredicates"] == {"n1": ["Insufficient cpu"]}


@pytest.mark.parametrize("config", [False, True], ids=["default-policy", "v1-config"])
def test_the_fit_hint_cuts_the_pod_level_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: bool
) -> None:
    # 1500m free on n1; the pod asks 2900m at pod level, 3 cpus with its overhead.
    big = level_pod("web", {"cpu": "2900m"}, overhead={"cpu": "100m"})
    decisions = simulate(
        tmp_path,
        capsys,
        node("n1", cpu="2"),
        pod("batch", node_name="n1", requests={"cpu": "500m"}),
        big,
        config=config,
    )
    web = decisions["default/web"]
    assert web["node"] is None
    assert web["failedPredicates"] == {"n1": ["Insufficient cpu"]}
    # The request to write in spec.resources: 1500m free, less the 100m overhead.
    assert web["hints"] == [{"change": "pod-level cpu request <= 1400m", "nodes": ["n1"]}]


def test_the_fit_hint_names_which_request_to_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # cpu is set at pod level, memory only by the container: each cut where it is set.
    obj = pod("web", requests={"cpu": "100m", "memory": "6Gi"})
    obj["spec"]["resources"] = {"requests": {"cpu": "3"}}
    decisions = simulate(tmp_path, capsys, node("n1", cpu="2", memory="4Gi"), obj, config=True)
    assert decisions["default/web"]["hints"] == [
        {"change": "pod-level cpu request <= 2, memory request <= 4Gi", "nodes": ["n1"]}
    ]


def test_the_pod_level_limit_defaults_the_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As the API server defaults it: no container asks cpu, so the pod's request is its
    # limit (3), which n1 (2 cpus) cannot hold.
    obj = pod("web", containers=[container(name="main")])
    obj["spec"]["resources"] = {"limits": {"cpu": "3", "memory": "1Gi"}}
    decisions = simulate(
        tmp_path, capsys, node("n1", cpu="2"), node("n2", cpu="4"), obj, config=True
    )
    assert decisions["default/web"]["node"] == "n2"
    assert decisions["default/web"]["failedPredicates"] == {"n1": ["Insufficient cpu"]}


def test_pods_differing_only_in_spec_resources_are_parsed_apart() -> None:
    # The parse of a pod's demands is shared between twins: spec.resources is part of
    # what makes them twins.
    plain = parse_pod(pod("a", requests={"cpu": "100m"}))
    with_level = level_pod("b", {"cpu": "2"})
    with_level["spec"]["containers"] = plain_containers = [container({"cpu": "100m"}, name="m")]
    twin = pod("c", containers=[dict(plain_containers[0])])
    assert parse_pod(with_level).request.milli_cpu == 2000
    assert parse_pod(twin).request.milli_cpu == 100
    assert plain.request.milli_cpu == 100


def refused(spec_resources: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    obj = pod("bad", schedulerName="default-scheduler", **kwargs)
    obj["spec"]["resources"] = spec_resources
    return obj


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        pytest.param(
            refused({"requests": {"nvidia.com/gpu": "1"}}),
            "spec.resources.requests.nvidia.com/gpu: not supported at pod level "
            "(only cpu, memory, hugepages-*)",
            id="extended-resource",
        ),
        pytest.param(
            refused({"limits": {"ephemeral-storage": "1Gi"}}),
            "spec.resources.limits.ephemeral-storage: not supported at pod level "
            "(only cpu, memory, hugepages-*)",
            id="ephemeral-storage",
        ),
        pytest.param(
            refused({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
            "spec.resources.requests.cpu: must be less than or equal to cpu limit of 1",
            id="request-above-limit",
        ),
        pytest.param(
            refused({"requests": {"cpu": "1"}}, requests={"cpu": "1500m"}),
            "spec.resources.requests.cpu: must be greater than or equal to aggregate "
            "container requests of 1500m",
            id="containers-above-pod-request",
        ),
        pytest.param(
            refused({"requests": {"memory": "1Gi"}}, requests={"memory": "2Gi"}),
            "spec.resources.requests.memory: must be greater than or equal to aggregate "
            "container requests of 2Gi",
            id="containers-above-pod-memory",
        ),
        pytest.param(
            refused(
                {"requests": {"cpu": "1"}},
                requests={"cpu": "500m"},
                init_containers=[
                    {**container({"cpu": "600m"}, name="proxy"), "restartPolicy": "Always"}
                ],
            ),
            "spec.resources.requests.cpu: must be greater than or equal to aggregate "
            "container requests of 1100m",
            id="containers-and-sidecar-above-pod-request",
        ),
        pytest.param(
            refused({"limits": {"cpu": "1"}}, limits={"cpu": "2"}),
            "spec.containers[0].resources.limits.cpu: must be less than or equal to pod "
            "limits of 1",
            id="container-limit-above-pod-limit",
        ),
        pytest.param(
            refused({"requests": {"cpu": "lots"}}),
            "spec.resources.requests.cpu: not a quantity: 'lots'",
            id="bad-quantity",
        ),
    ],
)
def test_a_pod_the_api_server_refuses_is_skipped_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: dict[str, Any], field: str
) -> None:
    path = tmp_path / "dump.yaml"
    good = pod("good", schedulerName="default-scheduler", requests={"cpu": "100m"})
    path.write_text(yaml.safe_dump_all([node("n1"), bad, good]))
    argv = ["simulate", "-f", str(path), "-o", "summary", "--scheduler-name", "default-scheduler"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == (
        f'note: skipping a pod that cannot be read: {path}: Pod "default/bad": {field}'
    )
    assert [line.split()[0] for line in out.splitlines()] == ["default/good"]
    with pytest.raises(ObjectError):
        parse_pod(bad)


def test_empty_spec_resources_is_no_pod_level_request() -> None:
    obj = pod("web", requests={"cpu": "100m"})
    obj["spec"]["resources"] = {"requests": {}, "limits": {}}
    got = parse_pod(obj)
    assert (got.request.milli_cpu, got.init) == (100, None)
