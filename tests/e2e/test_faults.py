"""Fault injection: the real operator against an emulator that fails the way an API server does.

Each test injects one kind of failure into the scheduler's own requests
(``tests/e2e/emulator.py``'s :class:`Fault`: an error status, a reply lost after the
write committed, a request never answered), or into its watch streams (an ERROR event,
a deletion the watch never reports), and checks what a cluster operator would: every pod
is bound, none twice, no node overcommitted, no false warning, and the process keeps
running and says so on /healthz. A last test kills the real ``policy-scheduler run``
process with SIGKILL and starts it again.

The API deadline is short here (``api_timeout=1``) so that a hung request costs a
second; the emulator answers these faults only to the scheduler (its User-Agent), never
to the test's own client.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

from builders import node, pod
from e2e.emulator import EmulatorServer, Fault
from e2e.harness import KubeClient, wait_until
from e2e.operator_harness import OperatorThread

SCHEDULER = "policy-scheduler"
FAST = {"api_timeout": 1.0, "shutdown_timeout": 5.0}


def our_pod(name: str, **kwargs: Any) -> dict[str, Any]:
    obj = pod(name, schedulerName=SCHEDULER, **kwargs)
    del obj["metadata"]["uid"]
    del obj["metadata"]["namespace"]
    return obj


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def inject(server: EmulatorServer, *faults: Fault) -> list[Fault]:
    server.call(lambda em: em.faults.extend(faults))
    return list(faults)


def injected(faults: list[Fault]) -> None:
    """Every fault did fail some request (else the test proved nothing)."""
    assert all(fault.hits for fault in faults), [(f.method, f.path, f.hits) for f in faults]


async def placements(kube: KubeClient, namespace: str) -> dict[str, str | None]:
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName")
        for p in await kube.list("v1", "Pod", namespace)
    }


async def all_bound(kube: KubeClient, namespace: str, names: list[str], timeout: float) -> None:
    async def done() -> bool:
        placed = await placements(kube, namespace)
        return all(placed.get(name) for name in names)

    await wait_until(done, timeout=timeout, interval=0.2, message="every pod bound")


def bound_once(server: EmulatorServer, names: list[str]) -> None:
    successes = Counter(b.pod for b in server.bindings if b.status < 300)
    assert successes == Counter(names), successes


async def healthz(port: int) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/healthz") as response,
    ):
        return response.status, await response.json()


async def warnings(kube: KubeClient, namespace: str) -> list[str]:
    return [
        e["message"] for e in await kube.list("v1", "Event", namespace) if e["type"] == "Warning"
    ]


# -- requests that fail ---------------------------------------------------------------------


async def test_bindings_that_never_answer_do_not_stop_scheduling(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    for i in range(3):
        await emulator.create(node(f"n{i}", cpu="8", memory="16Gi"))
    # A third of the bindings hang: with all 16 bind slots it once stopped for good.
    faults = inject(emulator_server, Fault("hang", "POST", "/binding", probability=0.3, seed=7))
    names = [f"p{i}" for i in range(24)]
    for name in names:
        await emulator.create(our_pod(name, requests={"cpu": "100m"}), namespace)
    health = free_port()
    async with OperatorThread(kubeconfig, bind_workers=4, health_port=health, **FAST):
        await all_bound(emulator, namespace, names, timeout=60)
        status, body = await healthz(health)
        assert (status, body["problems"]) == (200, [])
    bound_once(emulator_server, names)
    injected(faults)


async def test_errors_on_every_kind_of_call_lose_nothing_and_double_nothing(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    for i in range(3):
        await emulator.create(node(f"n{i}", cpu="2", memory="16Gi"))
    # 10% each of 500 and 429 on every request of the scheduler and of its watches, and
    # of 409 on its creations (bindings, events: a conflict answers a write; a read never
    # gets one, and a 409 on discovery would stop Kopf's resource observer, which no API
    # server does).
    faults = inject(
        emulator_server,
        *(Fault("status", None, "", status=s, probability=0.1, seed=s) for s in (500, 429)),
        Fault("status", "POST", "", status=409, probability=0.1, seed=409),
    )
    names = [f"p{i}" for i in range(30)]
    for name in names:
        await emulator.create(our_pod(name, requests={"cpu": "200m"}), namespace)
    async with OperatorThread(kubeconfig, **FAST) as operator:
        await all_bound(emulator, namespace, names, timeout=90)
    assert operator.error is None
    bound_once(emulator_server, names)
    placed = Counter((await placements(emulator, namespace)).values()).most_common()
    assert all(count <= 10 for _, count in placed), placed  # 10 x 200m fill a node
    injected(faults)


async def test_event_and_status_writes_that_hang_do_not_starve_bindings(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1", cpu="1", memory="16Gi"))
    faults = inject(
        emulator_server,
        Fault("hang", "POST", "/events"),
        Fault("hang", "PATCH", "/status"),
    )
    # Two pods that fit nowhere (their condition and event writes hang), then ten that fit.
    for name in ("big-0", "big-1"):
        await emulator.create(our_pod(name, requests={"cpu": "4"}), namespace)
    names = [f"p{i}" for i in range(10)]
    for name in names:
        await emulator.create(our_pod(name, requests={"cpu": "50m"}), namespace)
    async with OperatorThread(kubeconfig, bind_workers=2, **FAST):
        await all_bound(emulator, namespace, names, timeout=30)
    bound_once(emulator_server, names)
    injected(faults)


async def test_a_binding_whose_reply_was_lost_is_kept_not_doubled_nor_overcommitted(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("only", cpu="1", memory="16Gi"))
    # The first two bindings are written, then answered 500: a scheduler that forgot its
    # assumption at once decided the next pods on a node that looked emptier than it was.
    faults = inject(emulator_server, Fault("after", "POST", "/binding", status=500, times=2))
    names = [f"p{i}" for i in range(6)]
    for name in names:
        await emulator.create(our_pod(name, requests={"cpu": "300m"}), namespace)
    async with OperatorThread(kubeconfig, **FAST):

        async def three_bound() -> bool:
            return sum(1 for n in (await placements(emulator, namespace)).values() if n) == 3

        await wait_until(three_bound, timeout=20, interval=0.2, message="three pods bound")

        async def rest_refused() -> bool:
            # The other three decided (and reported) after the three took the node: a
            # wrong fourth binding, or a false warning, would have come before.
            return (
                sum(
                    1
                    for p in await emulator.list("v1", "Pod", namespace)
                    if not p["spec"].get("nodeName")
                    and any(
                        c.get("reason") == "Unschedulable"
                        for c in p.get("status", {}).get("conditions", [])
                    )
                )
                == 3
            )

        await wait_until(rest_refused, timeout=20, interval=0.2, message="the rest refused")
        placed = await placements(emulator, namespace)
    assert sum(1 for n in placed.values() if n) == 3  # 3 x 300m fit in 1 cpu, not 4
    assert not any(w.startswith("Binding rejected") for w in await warnings(emulator, namespace))
    # The emulator records what it did: a binding answered 500 was written (201 here).
    bound_once(emulator_server, [name for name, where in placed.items() if where])
    events = await emulator.list("v1", "Event", namespace)
    scheduled = sorted(e["involvedObject"]["name"] for e in events if e["reason"] == "Scheduled")
    assert scheduled == sorted(name for name, where in placed.items() if where)
    injected(faults)


async def test_a_failing_startup_list_is_retried_not_fatal(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1"))
    await emulator.create(our_pod("web"), namespace)
    faults = inject(
        emulator_server,
        Fault("status", "GET", "/api/v1/nodes", status=429, times=2),
        Fault("status", "GET", "/api/v1/pods", status=500, times=6),
    )
    async with OperatorThread(kubeconfig, **FAST):
        await all_bound(emulator, namespace, ["web"], timeout=30)
    injected(faults)


async def test_leader_election_survives_failing_lease_calls_and_a_failing_list(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    """A LIST failing right after the lease was taken once ended leader election
    silently ("acquired lease", then "released lease", and nobody scheduled again)."""
    await emulator.create(node("n1"))
    await emulator.create(our_pod("web"), namespace)
    faults = inject(
        emulator_server,
        Fault("status", None, "/leases", status=503, times=2),
        Fault("status", "GET", "/api/v1/pods", status=500, times=4, agents=("OpenAPI-Generator",)),
    )
    health = free_port()
    options = {"leader_elect": True, "retry_period": 0.5, "health_port": health}
    async with OperatorThread(kubeconfig, **options, **FAST) as operator:
        await all_bound(emulator, namespace, ["web"], timeout=30)
        assert operator.operator is not None and operator.operator.is_leader()
        status, body = await healthz(health)
        assert (status, body["problems"]) == (200, [])
    assert operator.error is None
    injected(faults)


# -- watches that fail ----------------------------------------------------------------------


async def test_a_watch_error_event_does_not_stop_the_operator(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1"))
    await emulator.create(our_pod("before"), namespace)
    error = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500}
    async with OperatorThread(kubeconfig, **FAST) as operator:
        await all_bound(emulator, namespace, ["before"], timeout=10)
        for kind in ("Pod", "Node"):
            event = {"type": "ERROR", "object": {**error, "message": f"etcd: {kind} lost"}}
            emulator_server.call(lambda em, k=kind, e=event: em.inject_watch_event("v1", k, e))
        await emulator.create(our_pod("after"), namespace)
        await all_bound(emulator, namespace, ["after"], timeout=15)
        assert operator.error is None


async def test_deletions_missed_by_the_watch_are_reconciled_after_a_relist(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("only", cpu="1", memory="16Gi"))
    await emulator.create(our_pod("hog", requests={"cpu": "800m"}), namespace)
    async with OperatorThread(kubeconfig, **FAST):
        await all_bound(emulator, namespace, ["hog"], timeout=10)
        await emulator.create(our_pod("waiting", requests={"cpu": "800m"}), namespace)
        await wait_until(
            lambda: any(
                e["reason"] == "FailedScheduling"
                for e in emulator_server.call(
                    lambda em: [o.raw for o in em.objects.values() if o.raw.get("kind") == "Event"]
                )
            ),
            timeout=10,
            message="the waiting pod found no room",
        )
        # The hog goes away while the watch hears nothing; then the watch expires (410)
        # and Kopf lists again: only a reconciliation finds the hog gone.
        emulator_server.call(lambda em: em.delete_silently("v1", "Pod", "hog", namespace))
        gone = {
            "type": "ERROR",
            "object": {"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired"},
        }
        emulator_server.call(lambda em: em.inject_watch_event("v1", "Pod", gone))
        await all_bound(emulator, namespace, ["waiting"], timeout=20)


# -- input that is wrong --------------------------------------------------------------------


async def test_a_pod_with_an_absurd_quantity_is_reported_and_the_others_go_on(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    await emulator.create(node("n1"))
    await emulator.create(our_pod("absurd", requests={"cpu": "9" * 100_000}), namespace)
    await emulator.create(our_pod("fine"), namespace)
    async with OperatorThread(kubeconfig, **FAST):
        await all_bound(emulator, namespace, ["fine"], timeout=10)

        async def reported() -> bool:
            return any(
                "the scheduler cannot read this pod" in w and "cpu" in w
                for w in await warnings(emulator, namespace)
            )

        await wait_until(reported, timeout=10, message="a warning on the absurd pod")


# -- the process killed -----------------------------------------------------------------------


def start_scheduler(kubeconfig: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE")}
    env["KUBECONFIG"] = str(kubeconfig)
    command = [sys.executable, "-m", "policy_scheduler.cli", "run", "--metrics-port", "0"]
    command += ["--health-port", "0", "--api-timeout", "2", "--log-level", "warning"]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


async def test_run_waits_out_a_first_list_answered_500_and_schedules(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    """``policy-scheduler run`` once exited at its first LIST of pods answered 500 more
    often than the client's own retries (``error: listing pods: HTTP 500``, exit 1)."""
    await emulator.create(node("n1"))
    await emulator.create(our_pod("web"), namespace)
    # The first LIST of pods fails 6 times: more than one round of the client's retries.
    faults = inject(
        emulator_server,
        Fault("status", "GET", "/api/v1/pods", status=500, times=6, agents=("OpenAPI-Generator",)),
    )
    scheduler = start_scheduler(kubeconfig)
    try:

        async def bound() -> bool:
            assert scheduler.poll() is None, "policy-scheduler run exited"
            return bool((await placements(emulator, namespace)).get("web"))

        await wait_until(bound, timeout=60, interval=0.2, message="web bound")
    finally:
        scheduler.send_signal(signal.SIGTERM)
        _, err = scheduler.communicate(timeout=30)
    assert scheduler.returncode == 0, err.decode()[-2000:]
    retries = [line for line in err.decode().splitlines() if "trying again in" in line]
    assert retries and all("listing pods: HTTP 500" in line for line in retries), retries
    injected(faults)


async def test_killed_and_restarted_it_binds_every_pod_once(
    emulator: KubeClient, emulator_server: EmulatorServer, namespace: str, kubeconfig: Path
) -> None:
    for i in range(3):
        await emulator.create(node(f"n{i}", cpu="8", memory="16Gi"))
    names = [f"p{i}" for i in range(40)]
    for name in names[:20]:
        await emulator.create(our_pod(name, requests={"cpu": "100m"}), namespace)
    # Half the bindings written then answered 500: some die with the process mid-flight.
    faults = inject(
        emulator_server, Fault("after", "POST", "/binding", status=500, probability=0.5)
    )
    first = start_scheduler(kubeconfig)
    try:

        async def some_bound() -> bool:
            return sum(1 for n in (await placements(emulator, namespace)).values() if n) >= 5

        await wait_until(some_bound, timeout=30, interval=0.2, message="some pods bound")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    for name in names[20:]:
        await emulator.create(our_pod(name, requests={"cpu": "100m"}), namespace)
    second = start_scheduler(kubeconfig)
    try:
        await all_bound(emulator, namespace, names, timeout=60)
    finally:
        second.send_signal(signal.SIGTERM)
        _, err = second.communicate(timeout=30)
    assert second.returncode == 0, err.decode()[-2000:]
    # Bindings answered 500 were written all the same (the emulator records them as done):
    # each pod was bound exactly once across both processes.
    bound_once(emulator_server, names)
    injected(faults)
