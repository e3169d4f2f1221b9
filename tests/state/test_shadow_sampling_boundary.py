"""The edge of a shadow's share of pods (issue 26, item 6).

``spec.shadow.percentageOfPods: P`` compares a pod when the CRC-32 of its uid, modulo
100, is below P (``state/shadows.py``): exactly P of the 100 buckets, so 1 % is one
bucket, not two, and 99 % leaves exactly one out. The sampling tests over 1000 uids allow
a tolerance that a bucket more or less would pass; these do not.
"""

from __future__ import annotations

import zlib

import pytest

from policy_scheduler.state.shadows import sampled


def one_uid_per_bucket() -> dict[int, str]:
    """A uid in each of the 100 buckets of the hash."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < 100:
        uid = f"pod-{i}"
        found.setdefault(zlib.crc32(uid.encode()) % 100, uid)
        i += 1
    return found


BUCKETS = one_uid_per_bucket()


@pytest.mark.parametrize("percentage", [1, 2, 30, 50, 99, 100])
def test_a_percentage_samples_exactly_that_many_of_the_hundred_buckets(percentage: int) -> None:
    chosen = sorted(bucket for bucket, uid in BUCKETS.items() if sampled(uid, percentage))
    assert chosen == list(range(percentage))


@pytest.mark.parametrize("percentage", [1, 30, 99])
def test_the_bucket_at_the_percentage_is_out_and_the_one_below_is_in(percentage: int) -> None:
    assert sampled(BUCKETS[percentage - 1], percentage)
    assert not sampled(BUCKETS[percentage], percentage)
