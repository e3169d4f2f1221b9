"""Render or lint the chart as ``helm template`` / ``helm lint --strict`` do, without helm.

Helm itself runs here: helm-python-sdk (a dev dependency) is Helm v4's Go SDK, shipped
as a shared library in its wheel and called through ctypes. No helm binary, no download,
no cluster. Values are given as helm takes them (``-f FILE`` repeatable, merged in order,
then ``--set``), and the chart's values.schema.json checks them as ``helm install`` would.

    .venv/bin/python charts/render.py --lint -f my-values.yaml      # exit 1: the problems
    .venv/bin/python charts/render.py -f my-values.yaml > rendered.yaml
    .venv/bin/kubernetes-validate --strict -k 1.30.0 rendered.yaml

The manifests go to stdout, one YAML document each, with helm's ``# Source:`` comment;
``--include-crds`` adds the chart's CRDs first, as ``helm template --include-crds``.
Any failure (values refused by the schema, a template's ``fail``) is one line on stderr,
``error: ...``, and exit code 1. charts/policy-scheduler/README.md documents it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import helm_python as helm

CHART = Path(__file__).resolve().parent / "policy-scheduler"
#: The Kubernetes version the chart is linted for (its kubeVersion allows 1.28 and later).
KUBE_VERSION = "1.30.0"


def merged(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` over ``base``, maps merged key by key, as helm merges values files."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(dict(out[key]), value)
        else:
            out[key] = value
    return out


def values_of(files: Sequence[str], sets: Sequence[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for path in files:
        values = merged(values, helm.values_from_yaml(Path(path).read_text()) or {})
    for expression in sets:
        values = merged(values, helm.parse_set_string(expression))
    return values


def render(chart: Path, values: dict[str, Any], args: argparse.Namespace) -> str:
    loaded = helm.Chart.load(chart)
    documents = []
    if args.include_crds:
        documents += [f"# Source: {crd['filename']}\n{crd['data'].strip()}" for crd in loaded.crds]
    files = loaded.render(values, name=args.name, namespace=args.namespace, is_install=True)
    for path, text in sorted(files.items()):
        if path.endswith("NOTES.txt") or not text.strip():
            continue
        documents.append(f"# Source: {path}\n{text.strip()}")
    return "".join(f"---\n{document}\n" for document in documents)


def lint(chart: Path, values: dict[str, Any], args: argparse.Namespace) -> list[str]:
    report = helm.lint(
        chart,
        values,
        strict=True,
        namespace=args.namespace,
        kube_version=f"v{args.kube_version}",
    )
    # Warnings count as errors (--strict); one line each. The errors repeat the messages.
    problems = [
        " ".join(f"{message['path']}: {message['error']}".split())
        for message in report["messages"]
        if message["severity"] >= 2
    ]
    for error in report["errors"]:
        text = " ".join(str(error).split())
        if not any(text in problem for problem in problems):
            problems.append(text)
    return problems


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="charts/render.py",
        description="helm template / helm lint --strict of the chart, with no helm binary.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("chart", nargs="?", default=str(CHART), help="the chart directory")
    p.add_argument(
        "-f",
        "--values",
        action="append",
        default=[],
        metavar="FILE",
        help="a values file; repeatable, later ones win",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a value on the command line, as helm's --set; repeatable, wins over files",
    )
    p.add_argument("--name", default="policy-scheduler", help="the release name")
    p.add_argument("-n", "--namespace", default="policy-scheduler", help="the release namespace")
    p.add_argument(
        "--include-crds", action="store_true", help="print the chart's CRDs first, as helm does"
    )
    p.add_argument(
        "--lint", action="store_true", help="lint (helm lint --strict) instead of rendering"
    )
    p.add_argument(
        "-k", "--kube-version", default=KUBE_VERSION, help="the Kubernetes version linted for"
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    chart = Path(args.chart)
    try:
        values = values_of(args.values, args.set)
        if args.lint:
            problems = lint(chart, values, args)
            for problem in problems:
                print(f"error: {problem}", file=sys.stderr)
            if not problems:
                print(f"{chart}: linted (strict), no problem", file=sys.stderr)
            return 1 if problems else 0
        sys.stdout.write(render(chart, values, args))
    except (helm.HelmError, OSError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
