"""The binding cycle reads typed outcomes, and preemption's writes go through the ports.

* What the Bind point answered is a :class:`BindAnswer`: each HTTP status of
  ``pods/binding`` means one thing (bound, bound elsewhere, gone, nobody can tell,
  failed with the words ``FailedScheduling`` then shows), and ``scheduler_binding``'s
  result label follows it.
* A status's ``cause`` (upstream's ``Status.Err()``) survives the framework: the
  plugin's name filled in, a Bind Error rewritten as "running Bind plugin ...", a PreBind
  rejection passed on: that is how DefaultBinder's HTTP answer and the volume binder's
  error reach the binding cycle.
* ``simulate`` and the operator carry a preemption out through the same call, the
  scheduler's ports' ``preempt``, once the attempt's outcome stands: with the victims
  for a preemptor, with only the nominations to clear for a gang given up.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from builders import cycle, node, pod, priority_class
from policy_scheduler.engine.cluster import ClusterState
from policy_scheduler.engine.interface import BindPlugin, Code, PreBindPlugin, Status
from policy_scheduler.engine.pipeline import run_bind, run_pre_bind
from policy_scheduler.objects import Pod, parse_pod
from policy_scheduler.runtime.binding import AMBIGUOUS, BindAnswer, Bound
from policy_scheduler.simulation import inputs_from_objects, simulate
from policy_scheduler.state.handles import CachePorts


@pytest.mark.parametrize(
    ("code", "bound", "problem", "metric"),
    [
        (201, Bound.BOUND, "", "success"),
        (200, Bound.BOUND, "", "success"),
        (409, Bound.ELSEWHERE, "", "conflict"),
        (404, Bound.GONE, "", "error"),
        (AMBIGUOUS, Bound.AMBIGUOUS, "", "error"),
        (0, Bound.FAILED, "HTTP connection error", "error"),
        (500, Bound.FAILED, "HTTP 500", "error"),
        (403, Bound.FAILED, "HTTP 403", "error"),
        (422, Bound.FAILED, "HTTP 422", "error"),
    ],
)
def test_each_binding_answer_means_one_thing(
    code: int, bound: Bound, problem: str, metric: str
) -> None:
    answer = BindAnswer.of_http(code)
    assert (answer.bound, answer.problem, answer.bound.metric) == (bound, problem, metric)


class Refused(Exception):
    pass


class Binder(BindPlugin):
    name = "Binder"

    def __init__(self, status: Status) -> None:
        self.status = status

    async def bind(self, state: Any, pod: Pod, node_name: str) -> Status | None:
        return self.status


class Volumes(PreBindPlugin):
    name = "Volumes"

    def __init__(self, status: Status) -> None:
        self.status = status

    async def pre_bind(self, state: Any, pod: Pod, node_name: str) -> Status | None:
        return self.status


class Entry:
    def __init__(self, plugin: Any) -> None:
        self.plugin, self.name = plugin, plugin.name


class Pipeline:
    def __init__(self, pre_bind: list[Entry]) -> None:
        self.pre_bind = pre_bind


def _pod() -> Pod:
    return parse_pod(pod("p"))


def test_a_bind_errors_cause_survives_the_framework_rewriting_its_words() -> None:
    cause = Refused("HTTP 500")
    status = asyncio.run(
        run_bind(
            [Entry(Binder(Status(Code.ERROR, ("HTTP 500",), cause=cause)))],  # type: ignore[list-item]
            cycle(_pod(), ClusterState()),
            _pod(),
            "n1",
        )
    )
    assert status.code is Code.ERROR
    assert status.message == 'running Bind plugin "Binder": HTTP 500'
    assert status.cause is cause


def test_a_prebind_rejections_cause_reaches_the_binding_cycle() -> None:
    cause = Refused("claim lost")
    status = asyncio.run(
        run_pre_bind(
            Pipeline([Entry(Volumes(Status(Code.UNSCHEDULABLE, ("lost",), cause=cause)))]),  # type: ignore[arg-type]
            cycle(_pod(), ClusterState()),
            _pod(),
            "n1",
        )
    )
    assert status is not None
    assert (status.plugin, status.message, status.cause) == ("Volumes", "lost", cause)


def test_a_cause_never_changes_what_a_status_means() -> None:
    assert Status(Code.ERROR, ("x",), cause=Refused()) == Status(Code.ERROR, ("x",))


def test_an_error_made_of_an_exception_keeps_it_as_its_cause() -> None:
    problem = Refused("inventory down")
    status = Status.error(problem)
    assert (status.message, status.cause) == ("Refused: inventory down", problem)
    assert Status.error("inventory down").cause is None


class RecordingPorts(CachePorts):
    """The cache's ports, recording each preemption carried out."""

    def __init__(self, cache: Any) -> None:
        super().__init__(cache)
        self.preempted: list[tuple[str, str | None, list[str], list[str], bool]] = []

    def preempt(
        self,
        pod: Pod,
        node: str | None,
        victims: Any,
        clear: Any,
        *,
        marks_victims: bool,
        profile: str,
    ) -> None:
        self.preempted.append(
            (pod.key, node, [v.key for v in victims], [c.key for c in clear], marks_victims)
        )
        super().preempt(pod, node, victims, clear, marks_victims=marks_victims, profile=profile)


def test_simulate_carries_a_preemption_out_through_the_ports_as_the_operator_does() -> None:
    victim = pod("victim", node_name="n1", requests={"cpu": "2"}, priority=0)
    victim["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}
    urgent = pod("urgent", requests={"cpu": "2"}, priorityClassName="high")
    urgent["spec"]["schedulerName"] = "policy-scheduler"
    objects = [priority_class("high", 1000), node("n1", cpu="2"), victim, urgent]
    inputs = inputs_from_objects([(o, "test") for o in objects])
    ports = RecordingPorts(inputs.world.cache)
    inputs.world.handle.ports = ports
    decisions = asyncio.run(simulate(inputs, explain=False))
    # The default policy's (v1.17's) preemption marks nobody; the victim left the
    # cluster, so the preemptor's second decision places it.
    assert ports.preempted == [("default/urgent", "n1", ["default/victim"], [], False)]
    assert [(d.pod.name, d.node) for d in decisions] == [("urgent", None), ("urgent", "n1")]
