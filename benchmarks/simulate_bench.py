"""``simulate`` at cluster scale: a generated ``kubectl get -o json`` dump, loaded and decided.

How it works
------------
The benchmark writes one ``kind: List`` file the way ``kubectl get
nodes,pods,rs,svc -A -o json`` writes it (no managedFields: kubectl hides them by
default since 1.21): ``--nodes`` Nodes (labels, annotations, addresses, capacity and
allocatable, five conditions with timestamps, a dozen images with digests, nodeInfo,
taints on a few), ``--running`` Pods bound to them and ``--pending`` Pods without a node,
all owned by ReplicaSets (ownerReferences, ``pod-template-hash`` labels, requests and
limits, env, probes, the projected service-account volume, default tolerations, full
status), the ReplicaSets themselves and a Service for half of them. Some deployments
carry affinity: preferred anti-affinity to themselves on the hostname, a required node
affinity to two zones, a topology spread over zones. A few pending pods ask for more CPU
than any node has, so some decisions end with kube-scheduler's summary message.

Then it measures, each command in a fresh process (``os.wait4`` gives its peak RSS):

* ``load`` — :func:`policy_scheduler.simulation.load_inputs` on the file, in a fresh
  interpreter: reading and decoding it, parsing every object and building the cluster
  (target <= 3 s); reading and decoding alone (``read_documents``) is timed before;
* ``summary`` — ``policy-scheduler simulate -f FILE -o summary``, end to end (process
  start, imports, load, every decision, the output) (target <= 5 s);
* ``json`` — the same with ``-o json`` (``--detail all``, the full contract), and with
  ``--detail top=3`` and ``--detail none``: wall time, bytes written, peak RSS.

The output of the commands goes to a file in the temporary directory (its size is
reported), not to a terminal.

With ``--v130`` every ``simulate`` command decides with kube-scheduler v1.30's default
profile instead of the legacy default policy (``--config`` with an empty v1
KubeSchedulerConfiguration whose one profile serves the pending pods' schedulerName).
``--ab PAIRS`` measures the two against each other instead: on the same dump, PAIRS
pairs of ``simulate -o summary``, legacy then v1.30 in even pairs and v1.30 then legacy
in odd ones (same minute, the order alternating so that a machine slowing down does not
favour one side), CPU seconds (user + system) of each command, the medians and how many
pairs each side won; the placements are counted too (the policies differ, so do some
placements).

Usage::

    python benchmarks/simulate_bench.py [--nodes 5000] [--running 10000] [--pending 1000]
        [--json FILE] [--keep DIR] [--yaml] [--quick] [--profile FILE.prof]
        [--v130 | --ab PAIRS]

``--yaml`` writes the dump as YAML instead (``kubectl get -o yaml``) to measure the
YAML path. ``--profile`` writes a cProfile of the load to FILE and prints its top 30
on stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import hashlib
import json
import os
import platform
import pstats
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:
    import policy_scheduler  # noqa: F401
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operator"))

from policy_scheduler.simulation import load_inputs, read_documents

ROOT = Path(__file__).resolve().parent.parent

TARGET_LOAD_S = 3.0
TARGET_SUMMARY_S = 5.0
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
#: (instance type, cpu, memory, share in percent)
SHAPES = (
    ("m5.2xlarge", "8", "32Gi", 60),
    ("m5.4xlarge", "16", "64Gi", 30),
    ("r5.4xlarge", "16", "128Gi", 10),
)
TIMESTAMP = "2026-11-01T08:00:00Z"
DETAILS = ("all", "top=3", "none")
#: The schedulerName of the dump's pending pods (the built-in default policy's).
PENDING_SCHEDULER = "policy-scheduler"
#: kube-scheduler v1.30's default profile, serving the pending pods.
V130_CONFIG = (
    "apiVersion: kubescheduler.config.k8s.io/v1\n"
    "kind: KubeSchedulerConfiguration\n"
    f"profiles:\n- schedulerName: {PENDING_SCHEDULER}\n"
)


# -- the dump -------------------------------------------------------------------------


def _uid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _suffix(rng: random.Random, length: int) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(length))


def _digest(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _shape(index: int) -> tuple[str, str, str]:
    slot = index % 100
    for kind, cpu, memory, share in SHAPES:
        if slot < share:
            return kind, cpu, memory
        slot -= share
    return SHAPES[0][:3]


def node_object(index: int, rng: random.Random) -> dict[str, Any]:
    name = f"ip-10-{index // 250}-{index % 250}-{index % 7}.ec2.internal"
    kind, cpu, memory = _shape(index)
    zone = ZONES[index % len(ZONES)]
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": kind,
        "beta.kubernetes.io/os": "linux",
        "failure-domain.beta.kubernetes.io/region": "us-east-1",
        "failure-domain.beta.kubernetes.io/zone": zone,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": kind,
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": zone,
        "eks.amazonaws.com/nodegroup": f"ng-{index % 5}",
    }
    spec: dict[str, Any] = {
        "podCIDR": f"10.{100 + index // 250}.{index % 250}.0/24",
        "podCIDRs": [f"10.{100 + index // 250}.{index % 250}.0/24"],
        "providerID": f"aws:///{zone}/i-{rng.getrandbits(64):017x}",
    }
    if index % 50 == 13:
        spec["taints"] = [{"effect": "NoSchedule", "key": "dedicated", "value": "batch"}]
    capacity = {
        "attachable-volumes-aws-ebs": "25",
        "cpu": cpu,
        "ephemeral-storage": "104845292Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": memory,
        "pods": "110",
    }
    allocatable = dict(
        capacity, cpu=f"{int(cpu) * 1000 - 90}m", **{"ephemeral-storage": "95551679124"}
    )
    conditions = [
        (t, "False", reason, message)
        for t, reason, message in (
            (
                "MemoryPressure",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        )
    ] + [("Ready", "True", "KubeletReady", "kubelet is posting ready status")]
    # Twelve images per node, of 36 in the cluster: one digest per image, as a registry has.
    images = [
        {
            "names": [
                f"registry.example.com/team-{i}/service@sha256:{_digest(i, index % 3)}",
                f"registry.example.com/team-{i}/service:v1.{i}.{index % 3}",
            ],
            "sizeBytes": 20_000_000 + 7_919_000 * i,
        }
        for i in range(12)
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": f"10.0.{index // 250}.{index % 250}",
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": TIMESTAMP,
            "labels": labels,
            "name": name,
            "resourceVersion": str(1_000_000 + index),
            "uid": _uid(rng),
        },
        "spec": spec,
        "status": {
            "addresses": [
                {"address": f"10.0.{index // 250}.{index % 250}", "type": "InternalIP"},
                {"address": name, "type": "Hostname"},
                {"address": name, "type": "InternalDNS"},
            ],
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": [
                {
                    "lastHeartbeatTime": TIMESTAMP,
                    "lastTransitionTime": TIMESTAMP,
                    "message": message,
                    "reason": reason,
                    "status": status,
                    "type": ctype,
                }
                for ctype, status, reason, message in conditions
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": images,
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": _uid(rng),
                "containerRuntimeVersion": "containerd://1.7.11",
                "kernelVersion": "5.10.205-195.804.amzn2.x86_64",
                "kubeProxyVersion": "v1.28.5-eks-5e0fdde",
                "kubeletVersion": "v1.28.5-eks-5e0fdde",
                "machineID": f"{rng.getrandbits(128):032x}",
                "operatingSystem": "linux",
                "osImage": "Amazon Linux 2",
                "systemUUID": _uid(rng).upper(),
            },
        },
    }


class Deployment:
    """What the pods of one ReplicaSet share: names, labels, requests, affinity."""

    def __init__(self, index: int, rng: random.Random) -> None:
        self.index = index
        self.namespace = f"team-{index % 40}"
        self.app = f"svc-{index}"
        self.hash = _suffix(rng, 10)
        self.name = f"{self.app}-{self.hash}"
        self.uid = _uid(rng)
        self.cpu = rng.choice(("50m", "100m", "250m", "500m", "1"))
        self.memory = rng.choice(("64Mi", "128Mi", "256Mi", "512Mi", "1Gi"))
        self.image = f"registry.example.com/team-{index % 12}/service:v1.{index % 12}.{index % 3}"
        self.labels = {"app": self.app, "pod-template-hash": self.hash, "team": self.namespace}
        self.affinity: dict[str, Any] | None = None
        self.spread: list[dict[str, Any]] | None = None
        selector = {"matchLabels": {"app": self.app}}
        if index % 10 == 1:
            self.affinity = {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "podAffinityTerm": {
                                "labelSelector": selector,
                                "topologyKey": "kubernetes.io/hostname",
                            },
                        }
                    ]
                }
            }
        elif index % 20 == 2:
            self.affinity = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "topology.kubernetes.io/zone",
                                        "operator": "In",
                                        "values": list(ZONES[:2]),
                                    }
                                ]
                            }
                        ]
                    }
                }
            }
        elif index % 20 == 3:
            self.spread = [
                {
                    "labelSelector": selector,
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                }
            ]

    def replica_set(self, replicas: int) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "creationTimestamp": TIMESTAMP,
                "labels": self.labels,
                "name": self.name,
                "namespace": self.namespace,
                "uid": self.uid,
            },
            "spec": {"replicas": replicas, "selector": {"matchLabels": dict(self.labels)}},
            "status": {"replicas": replicas},
        }

    def service(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": self.app, "namespace": self.namespace, "uid": f"svc-{self.uid}"},
            "spec": {
                "clusterIP": f"172.20.{self.index // 250}.{self.index % 250}",
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
                "selector": {"app": self.app},
                "type": "ClusterIP",
            },
        }

    def pod(
        self, rng: random.Random, node: str | None, *, created: str, cpu: str | None = None
    ) -> dict[str, Any]:
        name = f"{self.name}-{_suffix(rng, 5)}"
        volume = f"kube-api-access-{_suffix(rng, 5)}"
        requests = {"cpu": cpu or self.cpu, "memory": self.memory}
        container: dict[str, Any] = {
            "env": [
                {"name": "APP_NAME", "value": self.app},
                {
                    "name": "POD_NAME",
                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                },
            ],
            "image": self.image,
            "imagePullPolicy": "IfNotPresent",
            "name": "app",
            "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
            "readinessProbe": {
                "failureThreshold": 3,
                "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                "periodSeconds": 10,
                "successThreshold": 1,
                "timeoutSeconds": 1,
            },
            "resources": {"limits": {"memory": self.memory}, "requests": requests},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "volumeMounts": [
                {
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    "name": volume,
                    "readOnly": True,
                }
            ],
        }
        spec: dict[str, Any] = {
            "containers": [container],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            # Pending pods are ours (policy-scheduler's): simulate decides them with the
            # default policy; the running ones were placed by whichever scheduler.
            "schedulerName": "default-scheduler" if node else PENDING_SCHEDULER,
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {
                    "effect": "NoExecute",
                    "key": f"node.kubernetes.io/{taint}",
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                }
                for taint in ("not-ready", "unreachable")
            ],
            "volumes": [
                {
                    "name": volume,
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                    "name": "kube-root-ca.crt",
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                            "path": "namespace",
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                }
            ],
        }
        if self.affinity is not None:
            spec["affinity"] = self.affinity
        if self.spread is not None:
            spec["topologySpreadConstraints"] = self.spread
        if node is not None:
            spec["nodeName"] = node
            status: dict[str, Any] = {
                "conditions": [
                    {
                        "lastProbeTime": None,
                        "lastTransitionTime": created,
                        "status": "True",
                        "type": t,
                    }
                    for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
                ],
                "containerStatuses": [
                    {
                        "containerID": f"containerd://{rng.getrandbits(256):064x}",
                        "image": self.image,
                        "imageID": f"{self.image.split(':')[0]}@sha256:{_digest(self.image)}",
                        "lastState": {},
                        "name": "app",
                        "ready": True,
                        "restartCount": 0,
                        "started": True,
                        "state": {"running": {"startedAt": created}},
                    }
                ],
                "hostIP": "10.0.0.1",
                "phase": "Running",
                "podIP": f"10.{rng.randrange(100, 120)}.{rng.randrange(250)}.{rng.randrange(250)}",
                "qosClass": "Burstable",
                "startTime": created,
            }
        else:
            status = {
                "conditions": [
                    {
                        "lastProbeTime": None,
                        "lastTransitionTime": created,
                        "message": "0/3 nodes are available: 3 Insufficient cpu.",
                        "reason": "Unschedulable",
                        "status": "False",
                        "type": "PodScheduled",
                    }
                ],
                "phase": "Pending",
                "qosClass": "Burstable",
            }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "annotations": {"kubectl.kubernetes.io/restartedAt": TIMESTAMP},
                "creationTimestamp": created,
                "generateName": f"{self.name}-",
                "labels": self.labels,
                "name": name,
                "namespace": self.namespace,
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "blockOwnerDeletion": True,
                        "controller": True,
                        "kind": "ReplicaSet",
                        "name": self.name,
                        "uid": self.uid,
                    }
                ],
                "resourceVersion": str(rng.randrange(10**6, 10**8)),
                "uid": _uid(rng),
            },
            "spec": spec,
            "status": status,
        }


def generate(nodes: int, running: int, pending: int, *, seed: int = 1) -> dict[str, Any]:
    """A ``kubectl get nodes,pods,rs,svc -A -o json`` List of that size (deterministic)."""
    rng = random.Random(seed)
    node_items = [node_object(i, rng) for i in range(nodes)]
    node_names = [n["metadata"]["name"] for n in node_items]
    deployments = [Deployment(i, rng) for i in range(max(1, (running + pending) // 20))]
    replicas = [0] * len(deployments)
    pods: list[dict[str, Any]] = []
    for i in range(running):
        d = rng.randrange(len(deployments))
        replicas[d] += 1
        created = f"2026-11-01T{8 + i * 10 // running:02d}:{i % 60:02d}:00Z"
        pods.append(deployments[d].pod(rng, node_names[rng.randrange(nodes)], created=created))
    for i in range(pending):
        d = rng.randrange(len(deployments))
        replicas[d] += 1
        # 1% ask for more CPU than any node has: their decision is the summary message.
        cpu = "64" if i % 100 == 99 else None
        created = f"2026-11-02T{8 + i * 10 // pending:02d}:{i % 60:02d}:00Z"
        pods.append(deployments[d].pod(rng, None, created=created, cpu=cpu))
    rng.shuffle(pods)
    workloads: list[dict[str, Any]] = []
    for d, count in zip(deployments, replicas, strict=True):
        workloads.append(d.replica_set(count))
        if d.index % 2 == 0:
            workloads.append(d.service())
    return {
        "apiVersion": "v1",
        "items": [*node_items, *pods, *workloads],
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }


def write_dump(path: Path, dump: dict[str, Any], *, as_yaml: bool) -> None:
    if as_yaml:
        import yaml

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        with path.open("w") as handle:
            yaml.dump(dump, handle, Dumper=dumper, sort_keys=True)
    else:
        # kubectl's layout: four-space indentation.
        with path.open("w") as handle:
            json.dump(dump, handle, indent=4)
            handle.write("\n")


# -- measuring ------------------------------------------------------------------------


def run_command(argv: list[str], output: Path) -> dict[str, Any]:
    """Run ``argv`` with stdout to ``output``: wall seconds, peak RSS, exit code, bytes."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "operator"))
    with output.open("wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, env=env)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "seconds": round(elapsed, 3),
        # CPU time of the command: steadier than wall time on a shared machine.
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "exit_code": proc.returncode,
        "output_bytes": output.stat().st_size,
        "stderr": err.decode(errors="replace")[-2000:],
    }


def simulate_argv(path: Path, *extra: str, config: Path | None = None) -> list[str]:
    chosen = ["--config", str(config)] if config is not None else []
    return [
        sys.executable, "-m", "policy_scheduler.cli", "simulate", "-f", str(path), *chosen, *extra
    ]  # fmt: skip


def write_v130_config(workdir: Path) -> Path:
    path = workdir / "kube-scheduler-v1.30.yaml"
    path.write_text(V130_CONFIG)
    return path


def measure_ab(dump_path: Path, workdir: Path, pairs: int) -> dict[str, Any]:
    """``simulate -o summary``, legacy default policy against v1.30's default profile,
    in alternating pairs (see the module docstring)."""
    config = write_v130_config(workdir)
    sides = {"legacy": None, "v1.30": config}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    for pair in range(pairs):
        order = list(sides) if pair % 2 == 0 else list(reversed(sides))
        for name in order:
            output = workdir / f"summary-{name}.txt"
            row = run_command(simulate_argv(dump_path, "-o", "summary", config=sides[name]), output)
            row["placed"] = sum(" -> " in line for line in output.read_text().splitlines())
            runs[name].append(row)
    cpu = {name: [row["cpu_seconds"] for row in rows] for name, rows in runs.items()}
    return {
        "pairs": pairs,
        "cpu_seconds": cpu,
        "median_cpu_seconds": {name: statistics.median(values) for name, values in cpu.items()},
        "v130_cheaper_in": sum(
            1 for a, b in zip(cpu["legacy"], cpu["v1.30"], strict=True) if b < a
        ),
        "placed": {name: rows[-1]["placed"] for name, rows in runs.items()},
        "exit_codes": {
            name: sorted({row["exit_code"] for row in rows}) for name, rows in runs.items()
        },
        "stderr": {name: rows[-1]["stderr"] for name, rows in runs.items()},
    }


def measure_load(path: Path, profile: str | None) -> dict[str, Any]:
    """Time :func:`load_inputs` on ``path`` in this process: reading, then everything."""
    gc.collect()
    started = time.perf_counter()
    documents = read_documents(path)
    read = time.perf_counter() - started
    count = len(documents)
    del documents
    gc.collect()
    profiler = cProfile.Profile() if profile else None
    started = time.perf_counter()
    cpu_started = time.process_time()
    if profiler is not None:
        profiler.enable()
    inputs = load_inputs([path])
    if profiler is not None:
        profiler.disable()
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    if profiler is not None and profile is not None:
        profiler.dump_stats(profile)
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    return {
        "seconds": round(elapsed, 3),
        "cpu_seconds": round(cpu, 3),
        "read_seconds": round(read, 3),
        "objects": count,
        "nodes": len(inputs.world.cache.cluster.ordered_nodes()),
        "pending": inputs.world.queue.lengths()["active"],
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "target_seconds": TARGET_LOAD_S,
    }


def load_in_child(path: Path, profile: str | None) -> dict[str, Any]:
    """:func:`measure_load` in a fresh interpreter: nothing of the generator is around."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--measure-load", str(path)]
    if profile:
        argv += ["--profile", profile]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "operator"))
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    sys.stderr.write(done.stderr)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        return run_in(Path(args.keep), args)
    with tempfile.TemporaryDirectory(prefix="simulate-bench-") as workdir:
        return run_in(Path(workdir), args)


def run_in(workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    dump_path = workdir / ("cluster.yaml" if args.yaml else "cluster.json")
    started = time.perf_counter()
    dump = generate(args.nodes, args.running, args.pending, seed=args.seed)
    write_dump(dump_path, dump, as_yaml=args.yaml)
    del dump
    generated = time.perf_counter() - started
    report: dict[str, Any] = {
        "meta": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": {
                "nproc": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
            },
            "config": {
                "nodes": args.nodes,
                "running": args.running,
                "pending": args.pending,
                "format": "yaml" if args.yaml else "json",
                "seed": args.seed,
                "policy": "kube-scheduler v1.30 default profile" if args.v130 else "legacy default",
            },
        },
        "dump": {
            "path": str(dump_path),
            "bytes": dump_path.stat().st_size,
            "generate_seconds": round(generated, 2),
        },
    }
    if args.ab:
        report["ab"] = measure_ab(dump_path, workdir, args.ab)
        return report
    config = write_v130_config(workdir) if args.v130 else None
    report["load"] = load_in_child(dump_path, args.profile)
    summary = run_command(
        simulate_argv(dump_path, "-o", "summary", config=config), workdir / "summary.txt"
    )
    summary["target_seconds"] = TARGET_SUMMARY_S
    summary["lines"] = len((workdir / "summary.txt").read_text().splitlines())
    report["summary"] = summary
    report["json"] = {
        detail: run_command(
            simulate_argv(dump_path, "-o", "json", "--detail", detail, config=config),
            workdir / f"decisions-{detail.replace('=', '')}.json",
        )
        for detail in DETAILS
    }
    return report


def format_ab(report: dict[str, Any]) -> str:
    config, ab = report["meta"]["config"], report["ab"]
    lines = [
        f"simulate -o summary on {config['nodes']} nodes, {config['running']} running and "
        f"{config['pending']} pending pods: {ab['pairs']} alternating pairs, CPU seconds",
    ]
    for name, values in ab["cpu_seconds"].items():
        shown = ", ".join(f"{v:.2f}" for v in values)
        lines.append(
            f"{name:<8} median {ab['median_cpu_seconds'][name]:.2f}  [{shown}]  "
            f"placed {ab['placed'][name]}"
        )
    lines.append(f"v1.30 cheaper in {ab['v130_cheaper_in']} of {ab['pairs']} pairs")
    return "\n".join(lines)


def format_table(report: dict[str, Any]) -> str:
    config = report["meta"]["config"]
    lines = [
        f"simulate on {config['nodes']} nodes, {config['running']} running and "
        f"{config['pending']} pending pods ({config['format']}, "
        f"{report['dump']['bytes'] / 2**20:.1f} MiB), {config['policy']}",
        f"{'measure':<24} {'seconds':>8} {'CPU s':>6} {'target':>7} {'peak RSS MiB':>13} "
        f"{'output MiB':>11}",
    ]
    load = report["load"]
    lines.append(f"{'  read and decode':<24} {load['read_seconds']:>8.2f}")
    lines.append(
        f"{'load (read, parse)':<24} {load['seconds']:>8.2f} {load['cpu_seconds']:>6.2f} "
        f"{TARGET_LOAD_S:>7.1f} {load['peak_rss_mib']:>13.1f}"
    )
    rows = [("simulate -o summary", report["summary"], f"{TARGET_SUMMARY_S:.1f}")]
    rows += [(f"-o json --detail {d}", r, "") for d, r in report["json"].items()]
    for label, row, target in rows:
        lines.append(
            f"{label:<24} {row['seconds']:>8.2f} {row['cpu_seconds']:>6.2f} {target:>7} "
            f"{row['peak_rss_mib']:>13.1f} {row['output_bytes'] / 2**20:>11.2f}"
        )
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--running", type=int, default=10000)
    p.add_argument("--pending", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--yaml", action="store_true", help="write the dump as YAML, not JSON")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON to FILE")
    p.add_argument("--keep", metavar="DIR", help="write the dump and outputs to DIR")
    p.add_argument("--profile", metavar="FILE", help="cProfile the load into FILE")
    p.add_argument("--quick", action="store_true", help="a tiny cluster (50 nodes, 100 + 20 pods)")
    p.add_argument("--measure-load", metavar="FILE", help=argparse.SUPPRESS)
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--v130",
        action="store_true",
        help="decide with kube-scheduler v1.30's default profile (simulate --config)",
    )
    which.add_argument(
        "--ab",
        type=int,
        metavar="PAIRS",
        help="only -o summary: legacy default policy against v1.30's default profile, "
        "PAIRS alternating pairs",
    )
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    if args.measure_load:  # the child of load_in_child
        report = measure_load(Path(args.measure_load), args.profile)
        print(json.dumps(report))
        return report
    if args.quick:
        args.nodes, args.running, args.pending = 50, 100, 20
    report = run(args)
    if args.ab:
        codes = report["ab"]["exit_codes"]
        for name, found in codes.items():
            if found != [0]:
                print(f"{name}: exit {found}: {report['ab']['stderr'][name]}", file=sys.stderr)
        print(format_ab(report))
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        return report
    failed = [
        name
        for name, row in [("summary", report["summary"]), *report["json"].items()]
        if row["exit_code"] != 0
    ]
    if failed:
        for name in failed:
            row = report["summary"] if name == "summary" else report["json"][name]
            print(f"{name}: exit {row['exit_code']}: {row['stderr']}", file=sys.stderr)
    print(format_table(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
    sys.exit(0)
