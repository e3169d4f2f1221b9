"""PolicyBook: which SchedulingPolicy serves which schedulerName, and the verdict each
policy gets (what ``kubectl describe schedpol`` shows as the Accepted condition)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import policy
from policy_scheduler.kinds import parse_policy_object
from policy_scheduler.state.policies import (
    ACCEPTED,
    CONFLICT,
    INVALID,
    PolicyBook,
    Verdict,
)

DEFAULT = "policy-scheduler"
EARLY, LATE, LATER = "2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"


def obj(
    name: str,
    scheduler_name: str = "gpu",
    *,
    created: str = EARLY,
    generation: int = 1,
    valid: bool = True,
    weight: int = 1,
) -> dict[str, Any]:
    """A SchedulingPolicy; an invalid one has a zero priority weight."""
    body = policy(
        priorities=[("LeastRequestedPriority", weight if valid else 0)],
        schedulerName=scheduler_name,
    )
    body["metadata"] = {
        "name": name,
        "uid": f"uid-{name}",
        "creationTimestamp": created,
        "generation": generation,
    }
    return body


def apply(book: PolicyBook, raw: dict[str, Any]) -> list[Verdict]:
    """What the operator does with a SchedulingPolicy event: parse once, then judge."""
    return book.apply(parse_policy_object(raw))


def by_name(verdicts: list[Verdict]) -> dict[str, tuple[bool, str, str | None]]:
    return {v.name: (v.accepted, v.reason, v.serving) for v in verdicts}


def serving(book: PolicyBook, scheduler_name: str) -> str | None:
    compiled = book.policy_for(scheduler_name)
    return compiled.name if compiled is not None else None


@pytest.fixture
def book() -> PolicyBook:
    return PolicyBook(DEFAULT)


# -- one policy ------------------------------------------------------------------------------


def test_a_valid_policy_is_accepted_and_serves_its_name(book: PolicyBook) -> None:
    verdicts = apply(book, obj("gpu-policy"))
    assert by_name(verdicts) == {"gpu-policy": (True, ACCEPTED, "gpu")}
    assert verdicts[0].message == 'serving schedulerName "gpu"'
    assert verdicts[0].generation == 1
    assert serving(book, "gpu") == "gpu-policy"
    assert "gpu" in book.served_names()
    assert book.verdict("gpu-policy") == verdicts[0]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param(
            {"priorities": [{"name": "LeastRequestedPriority", "weight": 0}]},
            "spec.priorities[0].weight",
            id="zero-weight",
        ),
        pytest.param(
            {"predicates": [{"name": "NoSuchPredicate"}]},
            "spec.predicates[0].name",
            id="unknown-predicate",
        ),
        pytest.param(
            {"hardPodAffinitySymmetricWeight": 101},
            "spec.hardPodAffinitySymmetricWeight",
            id="symmetric-weight-out-of-range",
        ),
    ],
)
def test_an_invalid_policy_is_rejected_naming_the_field(
    book: PolicyBook, spec: dict[str, Any], field: str
) -> None:
    body = obj("broken")
    body["spec"] = {"schedulerName": "gpu", **spec}
    [verdict] = apply(book, body)
    assert (verdict.accepted, verdict.reason, verdict.serving) == (False, INVALID, None)
    assert field in verdict.message
    assert '"broken"' in verdict.message
    assert book.policy_for("gpu") is None


def test_an_invalid_update_keeps_the_last_accepted_version_serving(book: PolicyBook) -> None:
    apply(book, obj("p", weight=3))
    before = book.policy_for("gpu")
    [verdict] = apply(book, obj("p", generation=2, valid=False))
    assert (verdict.accepted, verdict.reason, verdict.serving) == (False, INVALID, "gpu")
    assert verdict.generation == 2
    assert "spec.priorities[0].weight" in verdict.message
    assert book.policy_for("gpu") is before  # still scheduling, with the old weights
    # A fixed spec is accepted again and replaces it.
    [verdict] = apply(book, obj("p", generation=3, weight=5))
    assert (verdict.accepted, verdict.reason, verdict.generation) == (True, ACCEPTED, 3)
    after = book.policy_for("gpu")
    assert after is not None and after is not before
    assert [p.weight for p in after.priorities] == [5]


def test_a_valid_update_to_another_name_moves_the_service(book: PolicyBook) -> None:
    apply(book, obj("p", "gpu"))
    [verdict] = apply(book, obj("p", "batch", generation=2))
    assert (verdict.accepted, verdict.serving) == (True, "batch")
    assert serving(book, "batch") == "p"
    assert book.policy_for("gpu") is None
    # Pods still naming "gpu" wait with a condition, as after a deletion.
    assert book.orphaned("gpu") and not book.orphaned("batch")


@pytest.mark.parametrize("valid", [True, False], ids=["valid", "invalid"])
def test_reapplying_the_same_object_reports_the_same_verdict(book: PolicyBook, valid: bool) -> None:
    first = apply(book, obj("p", valid=valid))
    again = apply(book, obj("p", valid=valid))  # a re-list, or a resync
    assert again == first
    assert book.verdict("p") == first[0]


def test_reapplying_a_rejected_claimant_reports_the_conflict_again(book: PolicyBook) -> None:
    apply(book, obj("old", created=EARLY))
    first = apply(book, obj("new", created=LATE))
    assert apply(book, obj("new", created=LATE)) == first
    assert by_name(first) == {"new": (False, CONFLICT, None)}


# -- two policies, one schedulerName ---------------------------------------------------------


@pytest.mark.parametrize("older_first", [True, False], ids=["older-applied-first", "newer-first"])
def test_the_later_policy_is_rejected_whatever_the_event_order(
    book: PolicyBook, older_first: bool
) -> None:
    old, new = obj("old", created=EARLY), obj("new", created=LATE)
    for body in [old, new] if older_first else [new, old]:
        apply(book, body)
    assert serving(book, "gpu") == "old"
    old_verdict, new_verdict = book.verdict("old"), book.verdict("new")
    assert old_verdict is not None and new_verdict is not None
    assert (old_verdict.accepted, old_verdict.reason) == (True, ACCEPTED)
    assert (new_verdict.accepted, new_verdict.reason) == (False, CONFLICT)
    assert new_verdict.message == (
        'schedulerName "gpu" is already served by SchedulingPolicy "old"'
    )


def test_same_creation_time_is_decided_by_name(book: PolicyBook) -> None:
    apply(book, obj("zeta", created=EARLY))
    apply(book, obj("alpha", created=EARLY))
    assert serving(book, "gpu") == "alpha"


def test_an_older_policy_applied_late_takes_the_name_and_reports_both(book: PolicyBook) -> None:
    apply(book, obj("new", created=LATE))
    verdicts = apply(book, obj("old", created=EARLY))
    assert by_name(verdicts) == {
        "new": (False, CONFLICT, None),
        "old": (True, ACCEPTED, "gpu"),
    }


def test_the_rejected_policy_takes_over_when_the_earlier_is_deleted(book: PolicyBook) -> None:
    apply(book, obj("old", created=EARLY))
    apply(book, obj("new", created=LATE))
    apply(book, obj("newest", created=LATER))
    verdicts = book.remove("old")
    # The next in line takes over; the newest is still refused, now naming "new".
    assert by_name(verdicts) == {
        "new": (True, ACCEPTED, "gpu"),
        "newest": (False, CONFLICT, None),
    }
    assert serving(book, "gpu") == "new"
    assert not book.orphaned("gpu")
    newest = book.verdict("newest")
    assert newest is not None and '"new"' in newest.message
    assert book.verdict("old") is None


def test_an_invalid_update_of_the_holder_does_not_hand_its_name_to_a_rival(
    book: PolicyBook,
) -> None:
    # The last accepted version keeps serving: a typo in the holder's update must not
    # silently switch every pod of that schedulerName to the rival policy.
    apply(book, obj("old", created=EARLY))
    apply(book, obj("new", created=LATE))
    verdicts = apply(book, obj("old", created=EARLY, generation=2, valid=False))
    assert by_name(verdicts) == {"old": (False, INVALID, "gpu")}
    assert serving(book, "gpu") == "old"
    new = book.verdict("new")
    assert new is not None and (new.accepted, new.reason) == (False, CONFLICT)


def test_an_invalid_policy_never_claims_a_name(book: PolicyBook) -> None:
    apply(book, obj("old", created=EARLY, valid=False))
    verdicts = apply(book, obj("new", created=LATE))
    assert by_name(verdicts) == {"new": (True, ACCEPTED, "gpu")}


# -- deletion, orphans and the built-in default ----------------------------------------------


def test_deleting_the_only_policy_orphans_its_name(book: PolicyBook) -> None:
    apply(book, obj("p"))
    assert book.remove("p") == []
    assert book.policy_for("gpu") is None
    assert book.orphaned("gpu")
    assert "gpu" not in book.served_names()
    # A new policy for the name adopts it.
    apply(book, obj("q", created=LATE))
    assert not book.orphaned("gpu")
    assert serving(book, "gpu") == "q"


def test_names_never_served_are_not_orphaned(book: PolicyBook) -> None:
    assert not book.orphaned("gpu")
    apply(book, obj("p", valid=False))
    book.remove("p")
    assert not book.orphaned("gpu")  # it never served anything


def test_removing_an_unknown_policy_is_harmless(book: PolicyBook) -> None:
    assert book.remove("nothing") == []


def test_the_builtin_default_serves_the_default_name(book: PolicyBook) -> None:
    builtin = book.policy_for(DEFAULT)
    assert builtin is not None and builtin.scheduler_name == DEFAULT
    assert book.served_names() == {DEFAULT}
    assert book.policy_for("gpu") is None


def test_a_policy_for_the_default_name_replaces_the_builtin_until_deleted(
    book: PolicyBook,
) -> None:
    builtin = book.policy_for(DEFAULT)
    apply(book, obj("custom", DEFAULT))
    assert serving(book, DEFAULT) == "custom"
    book.remove("custom")
    assert book.policy_for(DEFAULT) is builtin
    assert not book.orphaned(DEFAULT)


def test_the_default_name_follows_the_chart_setting() -> None:
    book = PolicyBook("my-scheduler")
    assert serving(book, "my-scheduler") is not None
    assert book.policy_for(DEFAULT) is None


def test_the_rival_takes_over_when_the_broken_holder_is_deleted(book: PolicyBook) -> None:
    apply(book, obj("old", created=EARLY))
    apply(book, obj("new", created=LATE))
    apply(book, obj("old", created=EARLY, generation=2, valid=False))
    verdicts = book.remove("old")
    assert by_name(verdicts) == {"new": (True, ACCEPTED, "gpu")}
    assert serving(book, "gpu") == "new"


def test_a_broken_holder_yields_to_an_older_valid_claimant(book: PolicyBook) -> None:
    apply(book, obj("young", "gpu", created=LATE))
    apply(book, obj("old", "batch", created=EARLY))
    apply(book, obj("young", "gpu", created=LATE, generation=2, valid=False))
    verdicts = apply(book, obj("old", "gpu", created=EARLY, generation=2))
    # The broken policy's status no longer claims to serve the name.
    assert by_name(verdicts) == {
        "old": (True, ACCEPTED, "gpu"),
        "young": (False, INVALID, None),
    }
    assert serving(book, "gpu") == "old"


def test_accepted_with_extenders_says_how_many_it_calls(book: PolicyBook) -> None:
    body = obj("p")
    body["spec"]["extenders"] = [
        {"urlPrefix": "http://extender:8888", "filterVerb": "filter"},
    ]
    [verdict] = apply(book, body)
    assert verdict.accepted
    assert verdict.message == 'serving schedulerName "gpu"; calls 1 HTTP extender(s)'
