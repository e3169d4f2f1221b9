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
    DEFAULT_SCHEDULER_NOT_ALLOWED,
    INVALID,
    NO_ACTIVE_POLICY,
    SHADOW,
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
    mode: str | None = None,
) -> dict[str, Any]:
    """A SchedulingPolicy; an invalid one has a zero priority weight."""
    body = policy(
        priorities=[("LeastRequestedPriority", weight if valid else 0)],
        schedulerName=scheduler_name,
    )
    if mode is not None:
        body["spec"]["mode"] = mode
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


@pytest.mark.parametrize("mode", [None, "Shadow"])
def test_a_policy_leaving_out_a_safeguard_is_accepted_with_a_warning(
    book: PolicyBook, mode: str | None
) -> None:
    raw = obj("packing", DEFAULT, mode=mode)
    raw["spec"]["predicates"] = [{"name": "GeneralPredicates"}, {"name": "EvenPodsSpread"}]
    [verdict] = apply(book, raw)
    assert verdict.accepted and verdict.reason == (SHADOW if mode else ACCEPTED)
    assert verdict.message.endswith(
        "; warning: spec.predicates leaves out PodToleratesNodeTaints, MatchInterPodAffinity, "
        "CheckVolumeBinding, NoVolumeZoneConflict, so what they check is not checked "
        "(`policy-scheduler validate` says what each protects)"
    )


def test_a_valid_policy_is_accepted_and_serves_its_name(book: PolicyBook) -> None:
    verdicts = apply(book, obj("gpu-policy"))
    assert by_name(verdicts) == {"gpu-policy": (True, ACCEPTED, "gpu")}
    assert verdicts[0].message == 'serving schedulerName "gpu"'
    assert verdicts[0].generation == 1
    assert serving(book, "gpu") == "gpu-policy"
    assert "gpu" in book.served_names()
    assert book.verdict("gpu-policy") == verdicts[0]


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        pytest.param(
            {"priorities": [{"name": "LeastRequestedPriority", "weight": 0}]},
            "spec.priorities[0].weight",
            INVALID,
            id="zero-weight",
        ),
        pytest.param(
            {"predicates": [{"name": "NoSuchPredicate"}]},
            "spec.predicates[0].name",
            "PluginNotFound",
            id="unknown-predicate",
        ),
        pytest.param(
            {"hardPodAffinitySymmetricWeight": 101},
            "spec.hardPodAffinitySymmetricWeight",
            INVALID,
            id="symmetric-weight-out-of-range",
        ),
    ],
)
def test_an_invalid_policy_is_rejected_naming_the_field(
    book: PolicyBook, spec: dict[str, Any], field: str, reason: str
) -> None:
    body = obj("broken")
    body["spec"] = {"schedulerName": "gpu", **spec}
    [verdict] = apply(book, body)
    assert (verdict.accepted, verdict.reason, verdict.serving) == (False, reason, None)
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


def test_reapplying_an_unchanged_spec_keeps_the_compiled_policy(book: PolicyBook) -> None:
    # Our own status writes come back as events: they must not recompile the policy
    # (its identity keys the equivalence cache and a shadow's window).
    apply(book, obj("p"))
    before = book.policy_for("gpu")
    apply(book, obj("p"))
    assert book.policy_for("gpu") is before
    apply(book, obj("p", generation=2, weight=4))
    assert book.policy_for("gpu") is not before


# -- shadow policies -------------------------------------------------------------------------


def shadows(book: PolicyBook, scheduler_name: str = "gpu") -> list[str]:
    return [p.name for p in book.shadows_of(scheduler_name)]


def judged(book: PolicyBook, name: str) -> tuple[bool, str, str | None, str | None]:
    verdict = book.verdict(name)
    assert verdict is not None
    return verdict.accepted, verdict.reason, verdict.serving, verdict.shadowing


def test_a_shadow_is_accepted_beside_the_active_policy_and_never_serves(
    book: PolicyBook,
) -> None:
    apply(book, obj("active", created=LATE))
    [verdict] = apply(book, obj("trial", created=EARLY, mode="Shadow"))
    # Older, yet no conflict: a shadow claims nothing.
    assert (verdict.accepted, verdict.reason, verdict.serving, verdict.shadowing) == (
        True,
        SHADOW,
        None,
        "gpu",
    )
    assert verdict.message == (
        'shadowing SchedulingPolicy "active" on schedulerName "gpu": deciding its pods '
        "too, never binding"
    )
    assert serving(book, "gpu") == "active"
    assert judged(book, "active") == (True, ACCEPTED, "gpu", None)
    assert shadows(book) == ["trial"]
    assert book.served_names() == {DEFAULT, "gpu"}


def test_shadows_of_a_name_are_listed_oldest_first(book: PolicyBook) -> None:
    apply(book, obj("active"))
    apply(book, obj("b", created=LATER, mode="Shadow"))
    apply(book, obj("a", created=LATE, mode="Shadow"))
    apply(book, obj("elsewhere", "batch", mode="Shadow"))
    assert shadows(book) == ["a", "b"]
    assert shadows(book, "batch") == ["elsewhere"]
    assert shadows(book, "nobody") == []


def test_a_shadow_of_the_default_name_shadows_the_builtin_policy(book: PolicyBook) -> None:
    [verdict] = apply(book, obj("trial", DEFAULT, mode="Shadow"))
    assert (verdict.accepted, verdict.reason) == (True, SHADOW)
    assert verdict.message.startswith(
        f'shadowing the built-in default policy on schedulerName "{DEFAULT}"'
    )
    assert book.policy_for(DEFAULT) is not None and shadows(book, DEFAULT) == ["trial"]


def test_a_shadow_without_an_active_policy_says_it_has_nothing_to_compare_with(
    book: PolicyBook,
) -> None:
    [verdict] = apply(book, obj("trial", mode="Shadow"))
    assert (verdict.accepted, verdict.reason, verdict.shadowing) == (True, NO_ACTIVE_POLICY, "gpu")
    assert verdict.message == (
        'no active SchedulingPolicy serves schedulerName "gpu": nothing to compare with '
        "(its pods wait for one)"
    )
    assert not book.serves("gpu")  # its pods wait: a shadow never decides them alone
    # An active policy arriving is reported to the shadow too; its deletion again.
    assert by_name(apply(book, obj("active", created=LATE))) == {
        "active": (True, ACCEPTED, "gpu"),
        "trial": (True, SHADOW, None),
    }
    assert by_name(book.remove("active")) == {"trial": (True, NO_ACTIVE_POLICY, None)}


def test_an_invalid_update_keeps_the_last_shadow_version_shadowing(book: PolicyBook) -> None:
    apply(book, obj("active"))
    apply(book, obj("trial", mode="Shadow"))
    before = book.shadows_of("gpu")
    [verdict] = apply(book, obj("trial", generation=2, valid=False, mode="Shadow"))
    assert (verdict.accepted, verdict.reason, verdict.serving, verdict.shadowing) == (
        False,
        INVALID,
        None,
        "gpu",
    )
    assert book.shadows_of("gpu") == before
    assert serving(book, "gpu") == "active"


def test_a_shadow_with_extenders_says_they_are_not_called(book: PolicyBook) -> None:
    apply(book, obj("active"))
    body = obj("trial", mode="Shadow")
    body["spec"]["extenders"] = [{"urlPrefix": "http://extender:8888", "filterVerb": "filter"}]
    [verdict] = apply(book, body)
    assert verdict.message.endswith("; its 1 HTTP extender(s) are not called in Shadow mode")


# -- promotion and demotion --------------------------------------------------------------------


@pytest.mark.parametrize(
    "demote_first", [False, True], ids=["promote-then-demote", "demote-then-promote"]
)
def test_promoting_a_younger_shadow_takes_over_once_the_active_one_steps_down(
    book: PolicyBook, demote_first: bool
) -> None:
    apply(book, obj("old", created=EARLY))
    apply(book, obj("new", created=LATE, mode="Shadow"))
    promote, demote = (
        obj("new", created=LATE, generation=2),
        obj("old", created=EARLY, generation=2, mode="Shadow"),
    )
    if demote_first:
        # Between the two, the name has no active policy: its pods wait.
        apply(book, demote)
        assert judged(book, "old") == (True, NO_ACTIVE_POLICY, None, "gpu")
        assert book.orphaned("gpu")
        apply(book, promote)
    else:
        # Two active policies for one name: the later is refused; the old one serves on.
        [verdict] = apply(book, promote)
        assert (verdict.accepted, verdict.reason, verdict.serving) == (False, CONFLICT, None)
        assert serving(book, "gpu") == "old" and shadows(book) == []
        apply(book, demote)
    assert serving(book, "gpu") == "new"
    assert judged(book, "new") == (True, ACCEPTED, "gpu", None)
    assert judged(book, "old") == (True, SHADOW, None, "gpu")
    assert shadows(book) == ["old"]
    assert not book.orphaned("gpu")


def test_promoting_an_older_shadow_displaces_the_younger_active_policy(book: PolicyBook) -> None:
    apply(book, obj("trial", created=EARLY, mode="Shadow"))
    apply(book, obj("active", created=LATE))
    verdicts = apply(book, obj("trial", created=EARLY, generation=2))
    assert by_name(verdicts) == {
        "active": (False, CONFLICT, None),
        "trial": (True, ACCEPTED, "gpu"),
    }
    assert serving(book, "gpu") == "trial" and shadows(book) == []


def test_demoting_the_default_names_policy_hands_it_back_to_the_builtin(
    book: PolicyBook,
) -> None:
    builtin = book.policy_for(DEFAULT)
    apply(book, obj("custom", DEFAULT))
    [verdict] = apply(book, obj("custom", DEFAULT, generation=2, mode="Shadow"))
    assert (verdict.reason, verdict.shadowing) == (SHADOW, DEFAULT)
    assert "the built-in default policy" in verdict.message
    assert book.policy_for(DEFAULT) is builtin
    assert not book.orphaned(DEFAULT)


# -- kube-scheduler's own name -----------------------------------------------------------------


def test_serving_default_scheduler_is_refused_unless_allowed() -> None:
    book = PolicyBook(DEFAULT, allow_default_scheduler=False)
    [verdict] = apply(book, obj("v130", "default-scheduler"))
    assert (verdict.accepted, verdict.reason, verdict.serving) == (
        False,
        DEFAULT_SCHEDULER_NOT_ALLOWED,
        None,
    )
    assert "--allow-default-scheduler" in verdict.message
    assert "allowDefaultScheduler: true" in verdict.message
    assert serving(book, "default-scheduler") is None
    # Renamed to a name of its own, it serves.
    [verdict] = apply(book, obj("v130", "v130", generation=2))
    assert (verdict.accepted, verdict.serving) == (True, "v130")


def test_a_shadow_of_default_scheduler_is_accepted_without_the_flag() -> None:
    # It never binds: comparing with kube-scheduler takes nothing over.
    book = PolicyBook(DEFAULT, allow_default_scheduler=False)
    [verdict] = apply(book, obj("v130", "default-scheduler", mode="Shadow"))
    assert (verdict.accepted, verdict.reason) == (True, NO_ACTIVE_POLICY)


def test_serving_default_scheduler_when_allowed() -> None:
    book = PolicyBook(DEFAULT, allow_default_scheduler=True)
    [verdict] = apply(book, obj("v130", "default-scheduler"))
    assert (verdict.accepted, verdict.reason, verdict.serving) == (
        True,
        ACCEPTED,
        "default-scheduler",
    )
    assert serving(book, "default-scheduler") == "v130"


def test_a_served_policy_renamed_to_default_scheduler_keeps_its_old_name() -> None:
    # As any refused update: the version in service keeps serving.
    book = PolicyBook(DEFAULT, allow_default_scheduler=False)
    apply(book, obj("p", "gpu"))
    [verdict] = apply(book, obj("p", "default-scheduler", generation=2))
    assert (verdict.accepted, verdict.reason, verdict.serving) == (
        False,
        DEFAULT_SCHEDULER_NOT_ALLOWED,
        "gpu",
    )
    assert serving(book, "gpu") == "p"
