"""End-to-end benchmark: the real operator, in its own process, against the emulator in another.

Three processes, as in a cluster: the emulator (``emulator_process.py``, the API server),
the operator under test, and this benchmark (the cluster's users: it creates the
objects and reads the emulator's binding log). Traffic stays on 127.0.0.1. For each
cluster size, measured in the order 1, 4, 2, 3 (the operator lists exactly the cluster
of step 1, not the pods of the other measures too):

1. **cluster**: ``nodes`` nodes (three zones) and ``bound_per_node`` running pods on each;
2. **raw binding**: ``pods`` pending pods bound by a plain client (kubernetes-asyncio
   through the operator's own ``KubeApi.bind``, ``bind_workers`` in flight), no
   scheduling: the emulator's binding rate, and this process's CPU per binding POST
   (the client's cost of one binding);
3. **Kopf floor**: ``noop_operator.py``, a Kopf operator with the scheduler's Kopf
   settings and a pod event handler that does nothing, watches ``pods`` pods being
   created and then bound by this process: its CPU per pod event is what any Kopf
   operator pays before its handler runs;
4. **operator**: ``policy-scheduler run`` (default policy, ``--qps 0``) is started,
   waits for its first LIST (``/readyz``) and settles; then ``pods`` pending pods are
   created and it schedules and binds them as they come. Its CPU (``/proc/<pid>/stat``,
   user + system, every thread) from the first creation until it is idle again,
   divided by ``pods``, is the operator's CPU per scheduled pod: the watch events of
   each pod (created, then bound), Kopf, the decision, the binding, the ``Scheduled``
   event. Wall pods/s runs from the first creation to the last binding (the creations
   go through the same emulator, so it is a floor of the operator's rate, not its
   ceiling). RSS (``/proc/<pid>/status``) is read once listed and at the end.

Run ``python benchmarks/e2e_bench.py [--nodes 500,5000] [--pods 2000] [--json FILE]
[--plot FILE]``; ``--quick`` (50 nodes, 100 pods) is the CI smoke. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "operator"), str(ROOT / "tests")]

import aiohttp  # noqa: E402
from kubernetes_asyncio import client, config  # noqa: E402

from e2e.harness import KubeClient, write_kubeconfig  # noqa: E402
from policy_scheduler.operating import loop_factory, untrust_env  # noqa: E402
from policy_scheduler.runtime.kubeapi import KubeApi  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CREATE_IN_FLIGHT = 32


# -- the cluster -------------------------------------------------------------------------


def node(name: str, zone: str) -> dict[str, Any]:
    resources = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
        },
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pending_pod(name: str) -> dict[str, Any]:
    """scheduler_perf's pod-default, for our scheduler."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "policy-scheduler",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}},
                }
            ],
        },
    }


def running_pod(name: str, node_name: str) -> dict[str, Any]:
    pod = pending_pod(name)
    pod["spec"]["nodeName"] = node_name
    pod["status"] = {"phase": "Running"}
    return pod


async def create_many(kube: KubeClient, objs: list[dict[str, Any]], namespace: str | None) -> None:
    gate = asyncio.Semaphore(CREATE_IN_FLIGHT)

    async def one(obj: dict[str, Any]) -> None:
        async with gate:
            await kube.create(obj, namespace)

    await asyncio.gather(*(one(o) for o in objs))


# -- processes ---------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, all its threads (``/proc/<pid>/stat``)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat.rsplit(")", 1)[1].split()  # the command may contain spaces
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def memory_mib(pid: int) -> tuple[float, float]:
    """(resident, peak resident) MiB of a process (``VmRSS``, ``VmHWM``)."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024  # kB
    return values["VmRSS"], values["VmHWM"]


async def settle(pid: int, *, window: float = 1.0, quiet: float = 0.03) -> float:
    """Wait until the process spends less than ``quiet`` CPU seconds in ``window`` seconds;
    its CPU seconds then."""
    last = cpu_seconds(pid)
    while True:
        await asyncio.sleep(window)
        now = cpu_seconds(pid)
        if now - last <= quiet:
            return now
        last = now


class LineProcess:
    """A helper process driven over stdin/stdout, one line per command and answer."""

    def __init__(
        self, script: str, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
    ) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name(script)), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def readline(self) -> list[str]:
        assert self.process.stdout is not None
        return self.process.stdout.readline().split()

    def ask(self, command: str) -> list[str]:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.readline()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.write("quit\n")
            self.process.stdin.flush()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class EmulatorProcess(LineProcess):
    """benchmarks/emulator_process.py: its own GIL, like an API server."""

    def __init__(self) -> None:
        super().__init__("emulator_process.py")
        line = self.readline()
        if line[:1] != ["URL"]:
            self.close()
            raise RuntimeError(f"the emulator did not start: {line}")
        self.url = line[1]

    def bindings(self) -> tuple[int, int, int]:
        """(successful bindings, attempts, most successful bindings of a single pod)."""
        _, ok, total, most = self.ask("bindings")
        return int(ok), int(total), int(most)


def child_environment(kubeconfig: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["KUBECONFIG"] = str(kubeconfig)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "operator"), *filter(None, [env.get("PYTHONPATH")])]
    )
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def operator_process(
    kubeconfig: Path, workers: int, log: IO[str]
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``policy-scheduler run`` as a child process; yields it and its health port."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "policy_scheduler.cli",
        "run",
        "--qps=0",
        f"--bind-workers={workers}",
        "--metrics-port=0",
        f"--health-port={port}",
        "--bind-address=127.0.0.1",
    ]
    process = subprocess.Popen(
        command, env=child_environment(kubeconfig), stdout=log, stderr=subprocess.STDOUT
    )
    try:
        yield process, port
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def wait_ready(
    port: int, process: subprocess.Popen[bytes], log: Path, timeout: float
) -> None:
    """Until ``/readyz`` answers 200 (the operator listed the cluster)."""
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while True:
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(f"http://127.0.0.1:{port}/readyz") as response:
                    if response.status == 200:
                        return
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the operator did not get ready:\n{log.read_text()[-3000:]}")
            await asyncio.sleep(0.2)


async def wait_bindings(emulator: EmulatorProcess, count: int, timeout: float) -> float:
    """Until the emulator has ``count`` successful bindings; the time then."""
    deadline = time.monotonic() + timeout
    while True:
        ok, _, _ = await asyncio.to_thread(emulator.bindings)
        if ok >= count:
            return time.perf_counter()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{ok} of {count} pods bound in time")
        await asyncio.sleep(0.05)


# -- the measurements --------------------------------------------------------------------


async def raw_binding(
    kubeconfig: Path, names: list[str], nodes: int, workers: int
) -> dict[str, float]:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    configuration.connection_pool_maxsize = workers
    async with client.ApiClient(configuration) as api_client:
        untrust_env(api_client)  # the same client settings as the operator's in a cluster
        api = KubeApi(api_client)
        gate = asyncio.Semaphore(workers)

        async def bind(i: int, name: str) -> None:
            async with gate:
                status = await api.bind("raw", name, "", f"n{i % nodes}")
                if status >= 300:
                    raise RuntimeError(f"raw binding of {name}: HTTP {status}")

        cpu, started = time.process_time(), time.perf_counter()
        await asyncio.gather(*(bind(i, n) for i, n in enumerate(names)))
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {
        "raw_bindings_per_s": len(names) / elapsed,
        "raw_client_cpu_ms_per_binding": 1000 * cpu / len(names),
    }


def py_spy(pid: int, output: str) -> subprocess.Popen[bytes]:
    """py-spy (``pip install py-spy``) recording ``pid`` as folded stacks, until SIGINT."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    options = ["--nonblocking", "--rate", "250", "--format", "raw", "--output", output]
    return subprocess.Popen(
        [py_spy, "record", *options, "--pid", str(pid)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_spying(spy: subprocess.Popen[bytes] | None) -> None:
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(30)


async def kopf_floor(
    kube: KubeClient, kubeconfig: Path, pods: int, nodes: int, profile: str | None = None
) -> dict[str, float]:
    """The no-op Kopf operator's CPU per pod event, pods created then bound."""
    noop = LineProcess("noop_operator.py", env=child_environment(kubeconfig))
    spy = None
    try:
        if noop.readline() != ["READY"]:
            raise RuntimeError("the no-op operator did not start")
        await settle(noop.pid)
        if profile:
            spy = py_spy(noop.pid, profile)
            await asyncio.sleep(1.0)  # py-spy attached
        before = int((await asyncio.to_thread(noop.ask, "events"))[1])
        cpu = cpu_seconds(noop.pid)
        gate = asyncio.Semaphore(CREATE_IN_FLIGHT)

        async def one(i: int) -> None:
            async with gate:
                await kube.create(pending_pod(f"floor-{i}"), "floor")
                status, _ = await kube.bind("floor", f"floor-{i}", f"n{i % nodes}")
                if status >= 300:
                    raise RuntimeError(f"binding floor-{i}: HTTP {status}")

        await asyncio.gather(*(one(i) for i in range(pods)))
        while int((await asyncio.to_thread(noop.ask, "events"))[1]) - before < 2 * pods:
            await asyncio.sleep(0.05)
        cpu = await settle(noop.pid) - cpu
        events = int((await asyncio.to_thread(noop.ask, "events"))[1]) - before
    finally:
        stop_spying(spy)
        noop.close()
    return {
        "kopf_floor_events_per_pod": events / pods,
        "kopf_floor_cpu_ms_per_event": 1000 * cpu / events,
        "kopf_floor_cpu_ms_per_pod": 1000 * cpu / pods,
    }


async def writes_floor(
    emulator: EmulatorProcess, kube: KubeClient, kubeconfig: Path, pods: int, nodes: int
) -> dict[str, float]:
    """The operator's own stack's floor: ``noop_operator.py --writes``, Kopf on the same
    pod stream doing only the binding and the ``Scheduled`` event of each pending pod;
    its CPU per pod from the first creation until it is idle again."""
    noop = LineProcess(
        "noop_operator.py", env=child_environment(kubeconfig), args=("--writes", str(nodes))
    )
    try:
        if noop.readline() != ["READY"]:
            raise RuntimeError("the no-op operator did not start")
        await settle(noop.pid)
        before, _, _ = await asyncio.to_thread(emulator.bindings)
        cpu = cpu_seconds(noop.pid)
        await create_many(kube, [pending_pod(f"w-{i}") for i in range(pods)], "writes")
        await wait_bindings(emulator, before + pods, timeout=max(300.0, pods / 2))
        cpu = await settle(noop.pid) - cpu
        rss, _ = memory_mib(noop.pid)
    finally:
        noop.close()
    return {"writes_floor_cpu_ms_per_pod": 1000 * cpu / pods, "writes_floor_rss_mib": rss}


async def scheduled(
    kube: KubeClient,
    emulator: EmulatorProcess,
    kubeconfig: Path,
    pods: int,
    workers: int,
    log: Path,
    profile: str | None = None,
) -> dict[str, float]:
    """The operator's CPU per scheduled pod, its wall rate and its memory.

    ``profile``: record the operator with py-spy (``pip install py-spy``) while it
    schedules, as folded stacks in that file.
    """
    with log.open("w") as out, operator_process(kubeconfig, workers, out) as (process, port):
        pid = process.pid
        started = time.perf_counter()
        await wait_ready(port, process, log, timeout=600)
        startup_cpu = await settle(pid)
        startup = time.perf_counter() - started
        rss_listed, _ = memory_mib(pid)
        before, _, _ = await asyncio.to_thread(emulator.bindings)
        spy = None
        if profile:
            spy = py_spy(pid, profile)
            await asyncio.sleep(1.0)  # py-spy attached
        cpu = cpu_seconds(pid)
        started = time.perf_counter()
        await create_many(kube, [pending_pod(f"p-{i}") for i in range(pods)], "bench")
        finished = await wait_bindings(emulator, before + pods, timeout=max(120.0, pods / 5))
        cpu = await settle(pid) - cpu
        stop_spying(spy)
        rss, peak = memory_mib(pid)
    return {
        "operator_pods_per_s": pods / (finished - started),
        "operator_seconds": finished - started,
        "operator_cpu_ms_per_pod": 1000 * cpu / pods,
        "operator_pods_per_cpu_s": pods / cpu,
        "operator_startup_seconds": startup,
        "operator_startup_cpu_seconds": startup_cpu,
        "operator_rss_listed_mib": rss_listed,
        "operator_rss_mib": rss,
        "operator_peak_rss_mib": peak,
    }


async def writes_floor_alone(nodes: int, pods: int) -> dict[str, float]:
    """The own stack's floor on a cluster of its own (tests: no operator, no other
    measure); adds the emulator's count of the pods bound, and of the most bindings
    of a single pod."""
    with tempfile.TemporaryDirectory() as tmp:
        emulator = EmulatorProcess()
        try:
            kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", emulator.url)
            async with KubeClient(emulator.url) as kube:
                await kube.create(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "writes"}}
                )
                await create_many(
                    kube, [node(f"n{i}", f"zone-{i % 3}") for i in range(nodes)], None
                )
                report = await writes_floor(emulator, kube, kubeconfig, pods, nodes)
            ok, _, most = await asyncio.to_thread(emulator.bindings)
        finally:
            emulator.close()
    return {**report, "bound": float(ok), "most_bindings_of_a_pod": float(most)}


async def run(
    nodes: int,
    pods: int,
    bound_per_node: int,
    workers: int,
    profile: str | None = None,
    writes: bool = True,
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "nodes": nodes,
        "pods": pods,
        "bound_pods": nodes * bound_per_node,
        "bind_workers": workers,
    }
    with tempfile.TemporaryDirectory() as tmp:
        emulator = EmulatorProcess()
        try:
            kubeconfig = write_kubeconfig(Path(tmp) / "kubeconfig", emulator.url)
            async with KubeClient(emulator.url) as kube:
                for ns in ("raw", "floor", "bound", "bench", "writes"):
                    await kube.create(
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                    )
                await create_many(
                    kube, [node(f"n{i}", f"zone-{i % 3}") for i in range(nodes)], None
                )
                running = [
                    running_pod(f"b-{i}-{j}", f"n{i}")
                    for i in range(nodes)
                    for j in range(bound_per_node)
                ]
                await create_many(kube, running, "bound")
                # The operator first: it lists exactly ``nodes`` nodes and ``bound_pods``
                # pods (the pods of the two other measures would be more).
                log = Path(tmp) / "operator.log"
                report.update(
                    await scheduled(kube, emulator, kubeconfig, pods, workers, log, profile)
                )
                _, _, most = await asyncio.to_thread(emulator.bindings)
                if most > 1:
                    raise RuntimeError("a pod was bound twice")
                raw_names = [f"raw-{i}" for i in range(pods)]
                await create_many(kube, [pending_pod(n) for n in raw_names], "raw")
                report.update(await raw_binding(kubeconfig, raw_names, nodes, workers))
                floor_profile = profile.replace(".folded", "-floor.folded") if profile else None
                report.update(await kopf_floor(kube, kubeconfig, pods, nodes, floor_profile))
                if writes:
                    report.update(await writes_floor(emulator, kube, kubeconfig, pods, nodes))
        finally:
            emulator.close()
    report["ratio"] = report["operator_pods_per_s"] / report["raw_bindings_per_s"]
    if writes:
        report["cpu_ratio_to_writes_floor"] = (
            report["operator_cpu_ms_per_pod"] / report["writes_floor_cpu_ms_per_pod"]
        )
    # The operator and the Kopf floor run on uvloop when this interpreter has it.
    report["event_loop"] = "uvloop" if loop_factory() is not None else "asyncio"
    return report


def describe(report: dict[str, Any]) -> str:
    return (
        f"{report['nodes']} nodes, {report['bound_pods']} bound pods, {report['pods']} pods "
        f"({report['event_loop']}):\n"
        f"  operator: {report['operator_cpu_ms_per_pod']:.2f} ms CPU per scheduled pod "
        f"({report['operator_pods_per_cpu_s']:.0f} pods per CPU second), "
        f"{report['operator_pods_per_s']:.0f} pods/s wall "
        f"({report['ratio']:.0%} of the raw binding rate); RSS "
        f"{report['operator_rss_listed_mib']:.0f} MiB listed, {report['operator_rss_mib']:.0f} "
        f"MiB at the end; startup {report['operator_startup_seconds']:.1f} s\n"
        f"  Kopf floor: {report['kopf_floor_cpu_ms_per_event']:.2f} ms CPU per pod event, "
        f"{report['kopf_floor_events_per_pod']:.1f} events per pod\n"
        f"  raw binding: {report['raw_bindings_per_s']:.0f}/s, "
        f"{report['raw_client_cpu_ms_per_binding']:.2f} ms client CPU per POST"
        + (
            f"\n  own stack's floor (Kopf + binding + event): "
            f"{report['writes_floor_cpu_ms_per_pod']:.2f} ms CPU per pod; the operator's CPU "
            f"per pod is {report['cpu_ratio_to_writes_floor']:.2f}x it"
            if "cpu_ratio_to_writes_floor" in report
            else ""
        )
        + (f" (runs {report['runs_cpu_ratio']})" if "runs_cpu_ratio" in report else "")
    )


def median_report(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure the median of the runs (the ratio too: the median of each run's)."""
    report = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, float):
            report[key] = statistics.median(run[key] for run in runs)
    report["runs"] = len(runs)
    if "cpu_ratio_to_writes_floor" not in runs[0]:
        return report
    report["runs_cpu_ratio"] = [round(run["cpu_ratio_to_writes_floor"], 2) for run in runs]
    report["runs_operator_cpu_ms_per_pod"] = [
        round(run["operator_cpu_ms_per_pod"], 3) for run in runs
    ]
    report["runs_writes_floor_cpu_ms_per_pod"] = [
        round(run["writes_floor_cpu_ms_per_pod"], 3) for run in runs
    ]
    return report


def plot(reports: list[dict[str, Any]], path: str) -> None:
    """Per scheduled pod: the operator's CPU beside the Kopf floor and one binding POST."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['nodes']} nodes" for r in reports]
    series = [
        ("operator, per scheduled pod", "operator_cpu_ms_per_pod"),
        ("Kopf floor, per pod (no-op handler)", "kopf_floor_cpu_ms_per_pod"),
        ("client, one binding POST", "raw_client_cpu_ms_per_binding"),
    ]
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(series)
    for k, (label, key) in enumerate(series):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(reports))]
        values = [r[key] for r in reports]
        bars = ax.bar(xs, values, width, label=label)
        ax.bar_label(bars, fmt="%.2f", fontsize=8)
    ax.axhline(2.0, color="grey", linestyle="--", linewidth=1, label="target: 2 ms")
    ax.set_xticks(range(len(reports)), labels)
    ax.set_ylabel("CPU ms")
    ax.set_title("Operator CPU per scheduled pod (SchedulingBasic, default policy)")
    # Room above the bars for the legend, so that it hides no bar or label.
    ax.set_ylim(0, 1.45 * max(max(r[key] for r in reports) for _, key in series))
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--nodes", default="500,5000", help="cluster sizes, comma-separated (default 500,5000)"
    )
    parser.add_argument("--pods", type=int, default=2000, help="pods per measurement")
    parser.add_argument("--bound-per-node", type=int, default=2, help="running pods per node")
    parser.add_argument("--bind-workers", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="50 nodes, 100 pods (CI smoke)")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each size; the medians are shown"
    )
    parser.add_argument(
        "--no-writes-floor",
        action="store_true",
        help="leave out the own stack's floor (Kopf plus the binding and the event)",
    )
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--plot", metavar="FILE", help="draw the CPU per pod (matplotlib)")
    parser.add_argument(
        "--profile",
        metavar="PREFIX",
        help="py-spy the operator while it schedules (PREFIX-<nodes>.folded) and the no-op "
        "Kopf operator (PREFIX-<nodes>-floor.folded); needs py-spy",
    )
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.nodes.split(",")]
    if args.quick:
        sizes, args.pods = [50], 100
    reports = []
    for nodes in sizes:
        profile = f"{args.profile}-{nodes}.folded" if args.profile else None
        runs = [
            asyncio.run(
                run(
                    nodes,
                    args.pods,
                    args.bound_per_node,
                    args.bind_workers,
                    profile,
                    writes=not args.no_writes_floor,
                )
            )
            for _ in range(max(1, args.repeat))
        ]
        report = median_report(runs) if len(runs) > 1 else runs[0]
        print(describe(report), flush=True)
        reports.append(report)
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=2) + "\n")
    if args.plot:
        plot(reports, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
