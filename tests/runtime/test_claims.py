"""DynamicResources' writes (runtime/claims.py) on a fake API: the allocation and the
reservation in PreBind, conflicts read again, a claim taken meanwhile refused, and the
reservation given back in Unreserve."""

from __future__ import annotations

from typing import Any

from builders import pod
from fakes import FakeApi
from policy_scheduler.devices import Allocation, DeviceResult, parse_resource_claim
from policy_scheduler.objects import parse_pod
from policy_scheduler.runtime.claims import (
    FINALIZER,
    deallocate_claim,
    release_claims,
    reserve_claims,
)

CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "gpu", "namespace": "default", "uid": "c1", "resourceVersion": "7"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g"}}]}},
}
ALLOCATION = Allocation((DeviceResult("gpu", "gpu.example.com", "n1", "gpu-0"),), None)
POD = parse_pod(pod("trainer"))


def api_with_claim(**status: Any) -> FakeApi:
    api = FakeApi()
    api.resource_claims[("default", "gpu")] = {**CLAIM, "status": status}
    return api


async def test_the_allocation_and_the_reservation_are_written_with_the_finalizer() -> None:
    api = api_with_claim()
    assert await reserve_claims(api, POD, [(parse_resource_claim(CLAIM), ALLOCATION)]) is None
    written = api.resource_claims[("default", "gpu")]
    assert written["metadata"]["finalizers"] == [FINALIZER]
    assert written["status"]["allocation"] == {
        "devices": {
            "results": [
                {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}
            ]
        }
    }
    assert written["status"]["reservedFor"] == [
        {"resource": "pods", "name": "trainer", "uid": POD.uid}
    ]
    # The finalizer in a normal update first, then the status.
    assert [c.method for c in api.calls if c.method.startswith("replace")] == [
        "replace_resource_claim",
        "replace_resource_claim_status",
    ]


async def test_a_conflict_reads_the_claim_again_and_writes_again() -> None:
    api = api_with_claim()
    api.statuses["replace_resource_claim_status"] = [409, 200]
    assert await reserve_claims(api, POD, [(parse_resource_claim(CLAIM), ALLOCATION)]) is None
    assert len(api.of("get_resource_claim")) == 2
    assert api.resource_claims[("default", "gpu")]["status"]["reservedFor"][0]["uid"] == POD.uid


async def test_a_claim_allocated_meanwhile_fails_the_binding_naming_it() -> None:
    api = api_with_claim(allocation={"devices": {"results": []}})
    status = await reserve_claims(api, POD, [(parse_resource_claim(CLAIM), ALLOCATION)])
    assert status is not None
    assert status.message == "claim default/gpu got allocated elsewhere in the meantime"
    assert not api.of("replace_resource_claim_status")


async def test_a_claim_deleted_meanwhile_fails_the_binding_naming_it() -> None:
    api = FakeApi()
    status = await reserve_claims(api, POD, [(parse_resource_claim(CLAIM), ALLOCATION)])
    assert status is not None and status.message == "claim default/gpu got deleted in the meantime"


async def test_an_allocated_claim_is_only_reserved() -> None:
    allocated = {
        "devices": {"results": [{"request": "gpu", "driver": "d", "pool": "p", "device": "x"}]}
    }
    api = api_with_claim(allocation=allocated)
    assert await reserve_claims(api, POD, [(parse_resource_claim(CLAIM), None)]) is None
    written = api.resource_claims[("default", "gpu")]
    assert written["status"]["allocation"] == allocated
    assert "finalizers" not in written["metadata"]


async def test_unreserve_takes_only_this_pod_out_of_reserved_for() -> None:
    other = {"resource": "pods", "name": "other", "uid": "u-other"}
    mine = {"resource": "pods", "name": "trainer", "uid": POD.uid}
    api = api_with_claim(reservedFor=[other, mine])
    await release_claims(api, POD, [parse_resource_claim(CLAIM)])
    assert api.resource_claims[("default", "gpu")]["status"]["reservedFor"] == [other]


class LostReplies(FakeApi):
    """Status writes land, then their reply is lost (500, or no answer: status 0)."""

    def __init__(self, answer: int) -> None:
        super().__init__()
        self.answer = answer

    async def replace_resource_claim(
        self, namespace: str, name: str, body: Any, *, status: bool
    ) -> tuple[int, dict[str, Any] | None]:
        written = await super().replace_resource_claim(namespace, name, body, status=status)
        return (self.answer, None) if status else written


async def test_a_status_write_that_landed_with_its_reply_lost_lets_prebind_go_on() -> None:
    # Failing it would give back the devices the claim now holds: the next pod would be
    # allocated them too.
    for answer in (500, 503, 0):
        api = LostReplies(answer)
        api.resource_claims[("default", "gpu")] = {**CLAIM, "status": {}}
        assert await reserve_claims(api, POD, [(parse_resource_claim(CLAIM), ALLOCATION)]) is None
        assert len(api.of("replace_resource_claim_status")) == 1  # read back, not written twice
        assert len(api.of("get_resource_claim")) == 2


async def test_a_status_write_answered_500_that_did_not_land_fails_without_a_second_write() -> None:
    for answer in (500, 503):
        api = api_with_claim()
        api.statuses["replace_resource_claim_status"] = answer
        status = await reserve_claims(api, POD, [(parse_resource_claim(CLAIM), ALLOCATION)])
        assert status is not None
        assert status.message == (
            f"add allocation and reservation to claim default/gpu: HTTP {answer}"
        )
        assert len(api.of("replace_resource_claim_status")) == 1
        assert not api.resource_claims[("default", "gpu")]["status"]


ALLOCATED = {
    "devices": {"results": [{"request": "gpu", "driver": "d", "pool": "n1", "device": "g"}]}
}


async def test_post_filter_clears_the_allocation_and_the_reservation() -> None:
    mine = {"resource": "pods", "name": "trainer", "uid": POD.uid}
    api = api_with_claim(allocation=ALLOCATED, reservedFor=[mine], devices=[{"x": 1}])
    assert await deallocate_claim(api, POD, parse_resource_claim(CLAIM)) is None
    assert api.resource_claims[("default", "gpu")]["status"] == {}
    assert len(api.of("replace_resource_claim_status")) == 1


async def test_post_filter_leaves_a_claim_another_pod_reserved_meanwhile() -> None:
    other = {"resource": "pods", "name": "other", "uid": "uid-other"}
    api = api_with_claim(allocation=ALLOCATED, reservedFor=[other])
    assert await deallocate_claim(api, POD, parse_resource_claim(CLAIM)) is None
    assert not api.of("replace_resource_claim_status")
    assert api.resource_claims[("default", "gpu")]["status"]["allocation"] == ALLOCATED


async def test_a_failed_deallocation_is_post_filters_error_naming_the_claim() -> None:
    api = api_with_claim(allocation=ALLOCATED)
    api.statuses["replace_resource_claim_status"] = 409
    status = await deallocate_claim(api, POD, parse_resource_claim(CLAIM))
    assert status is not None and status.code.name == "ERROR"
    assert status.message == "deallocate claim default/gpu: HTTP 409"
