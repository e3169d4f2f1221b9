"""A policy naming many plugins nobody installed is judged without reading the installed
packages' metadata once per name (each read takes milliseconds, on the event loop: 2000
names held the operator 28 s): the metadata is read again at most once for the lot."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from policy_scheduler.engine import plugins
from policy_scheduler.engine.compiler import compile_policy
from policy_scheduler.policy import PolicyError, parse_policy


def test_two_hundred_unknown_plugins_cost_a_couple_of_metadata_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = []
    real = plugins.entry_points

    def counted(**kwargs: Any) -> Any:
        reads.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(plugins, "entry_points", counted)
    monkeypatch.setattr(plugins, "_last_refresh", float("-inf"))
    unknown = [f"Nobody{i}" for i in range(200)]
    asyncio.run(plugins.load_named(unknown))  # what the operator does before judging
    doc = {
        "apiVersion": "policyscheduler.io/v1alpha1",
        "kind": "SchedulingPolicy",
        "metadata": {"name": "many"},
        "spec": {"plugins": {"multiPoint": {"enabled": [{"name": n} for n in unknown]}}},
    }
    with pytest.raises(PolicyError):
        compile_policy(parse_policy(doc))
    assert len(reads) <= 3, len(reads)
