"""The structured allocator of DRA (``k8s.io/dynamic-resource-allocation/structured``,
its stable channel as kube-scheduler v1.34 runs it), for one node at a time.

**Pools.** The slices that reach the node (``nodeName``, a matching ``nodeSelector``, or
``allNodes``) are grouped by (driver, pool). Within a pool only the slices of the
highest ``generation`` count; a pool with fewer of them than its
``resourceSliceCount`` is *incomplete* and one that names a device twice *invalid*:
neither gives a device (a request for All of a class fails when one of its pools is so,
since "all" cannot be known). Pools are taken in (driver, pool) order, then slices and
devices in their order (upstream iterates a map: any order is valid, ours is stable).

**Search.** Claims in order, their requests in order, each request's devices one after
the other: every candidate device that is not in use (allocated to another claim, or
already chosen in this search; a request with ``adminAccess`` may take a device in use,
but not twice in one claim), passes the class's selectors and the request's, and keeps
every constraint of its claim satisfied (``matchAttribute``: all devices of the
constraint's requests carry the attribute with one value) is tried, and the search goes
on from there; a dead end undoes the last choice (backtracking). The first full
solution wins. A ``firstAvailable`` request tries its alternatives in order and keeps
the first that leads to a solution; an ``All`` request needs every matching device of
the node's pools, at least one. A claim may get at most 32 devices.

**Errors.** What no node could fix is an :class:`AllocationError` (a CEL selector that
does not compile or fails at run time, an unknown device class, ``All`` over an
incomplete pool, a constraint that "all" devices cannot meet); "no devices fit here" is
None.

**Deadline.** ``allocate(..., timeout=)`` bounds one node's search (DynamicResourcesArgs'
``filterTimeout``, v1.34): the clock is read when the search starts choosing and every
16th device step after, and a search past its deadline raises :class:`AllocationTimeout`
(upstream's allocator checks its context the same way, so a search that ends before the
first check succeeds whatever the timeout).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ...devices import (
    ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    Device,
    DeviceClass,
    DeviceConstraint,
    DeviceResult,
    DeviceSubRequest,
    ResourceClaim,
    ResourceSlice,
)
from ._devicecel import SelectorError, compile_selector, device_matches

#: (driver, pool, device): a device, cluster-wide.
DeviceId = tuple[str, str, str]


class AllocationError(Exception):
    """A claim that cannot be allocated on any node as it stands (the message says why)."""


class AllocationTimeout(Exception):
    """One node's search ran past its deadline (``filterTimeout``)."""


@dataclass(slots=True)
class Pool:
    """The slices of one (driver, pool) that reach the node, newest generation only."""

    driver: str
    name: str
    slices: list[ResourceSlice] = field(default_factory=list)
    incomplete: bool = False
    invalid: str = ""

    @property
    def usable(self) -> bool:
        return not self.incomplete and not self.invalid


def gather_pools(
    slices: Sequence[ResourceSlice], node_name: str, node_labels: Mapping[str, str]
) -> list[Pool]:
    """The pools whose slices reach the node, newest generation only, in (driver, pool)
    order, each marked incomplete or invalid when it is."""
    pools: dict[tuple[str, str], Pool] = {}
    for s in slices:
        if not s.reaches(node_name, node_labels):
            continue
        pool = pools.get((s.driver, s.pool))
        if pool is None:
            pools[(s.driver, s.pool)] = Pool(s.driver, s.pool, [s])
            continue
        generation = pool.slices[0].generation
        if s.generation < generation:
            continue  # outdated
        if s.generation > generation:
            pool.slices = []  # newer: replaces every older slice
        pool.slices.append(s)
    found = []
    for key in sorted(pools):
        pool = pools[key]
        pool.incomplete = len(pool.slices) != pool.slices[0].slice_count
        names: set[str] = set()
        for s in pool.slices:
            for device in s.devices:
                if device.name in names:
                    pool.invalid = f"duplicate device name {device.name}"
                names.add(device.name)
        found.append(pool)
    return found


@dataclass(slots=True)
class _Candidate:
    device_id: DeviceId
    device: Device
    slice: ResourceSlice


@dataclass(slots=True)
class _Request:
    """One request, or one alternative of a ``firstAvailable`` request."""

    claim: int
    name: str  # as a result names it: "request" or "request/alternative"
    base: str  # the request's name
    sub: str  # the alternative's name, or ""
    spec: DeviceSubRequest
    device_class: DeviceClass
    count: int
    #: For ``All``: the devices it needs, found beforehand.
    all_devices: list[_Candidate] = field(default_factory=list)


@dataclass(slots=True)
class _MatchAttribute:
    constraint: DeviceConstraint
    value: object = None
    devices: int = 0

    def applies(self, base: str, sub: str) -> bool:
        names = self.constraint.requests
        return not names or base in names or (bool(sub) and f"{base}/{sub}" in names)

    def add(self, base: str, sub: str, candidate: _Candidate) -> bool:
        if not self.applies(base, sub):
            return True
        attribute = _lookup(candidate, self.constraint.match_attribute)
        if attribute is None:
            return False
        if self.devices and attribute != self.value:
            return False
        if not self.devices:
            self.value = attribute
        self.devices += 1
        return True

    def remove(self, base: str, sub: str) -> None:
        if self.applies(base, sub):
            self.devices -= 1


def _lookup(candidate: _Candidate, qualified: str) -> object:
    """A device's attribute by its fully qualified name (kind and value), or None."""
    attributes = candidate.device.attributes
    found = attributes.get(qualified)
    if found is None:
        domain, _, ident = qualified.partition("/")
        if domain != candidate.device_id[0]:
            return None
        found = attributes.get(ident)
    return None if found is None else (found.kind, found.value)


class Allocator:
    """Devices for claims on one node at a time, given what is in use already."""

    def __init__(
        self,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice] | None,
        in_use: frozenset[DeviceId] | set[DeviceId],
        *,
        local: Mapping[str, Mapping[str, ResourceSlice]] | None = None,
        shared: Mapping[str, ResourceSlice] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``slices``: every slice; or, already indexed, ``local`` (node -> its slices
        by name) and ``shared`` (the others): a node's allocation reads only its own
        and the shared ones. ``clock`` times the searches that have a timeout."""
        self.classes = classes
        self.in_use = in_use
        self.clock = clock
        if slices is not None:
            built: dict[str, dict[str, ResourceSlice]] = {}
            others: dict[str, ResourceSlice] = {}
            for s in slices:
                if s.node_name:
                    built.setdefault(s.node_name, {})[s.name] = s
                else:
                    others[s.name] = s
            local, shared = built, others
        self.local: Mapping[str, Mapping[str, ResourceSlice]] = local or {}
        self.shared: Mapping[str, ResourceSlice] = shared or {}

    def allocate(
        self,
        node_name: str,
        node_labels: Mapping[str, str],
        claims: Sequence[ResourceClaim],
        *,
        timeout: float | None = None,
    ) -> list[tuple[DeviceResult, ...]] | None:
        """One tuple of results per claim, or None when the node cannot serve them all;
        :class:`AllocationTimeout` past ``timeout`` seconds (None or 0: no limit)."""
        deadline = self.clock() + timeout if timeout else None
        own = self.local.get(node_name)
        slices = [*(own.values() if own else ()), *self.shared.values()]
        search = _Search(self, gather_pools(slices, node_name, node_labels), claims)
        search.deadline = deadline
        return search.run()


class _Search:
    def __init__(
        self, allocator: Allocator, pools: list[Pool], claims: Sequence[ResourceClaim]
    ) -> None:
        self.allocator = allocator
        self.pools = pools
        self.claims = claims
        self.deadline: float | None = None
        self.steps = 0
        self.matches: dict[tuple[int, str, DeviceId], bool] = {}
        self.choosing: dict[DeviceId, set[int]] = {}
        self.results: list[list[tuple[str, _Candidate, bool]]] = [[] for _ in claims]
        #: Per claim, per request: the request itself or its alternatives, in order.
        self.requests: list[list[list[_Request]]] = []
        self.constraints = [
            [_MatchAttribute(c) for c in claim.spec.constraints] for claim in claims
        ]
        for index, claim in enumerate(claims):
            per_claim: list[list[_Request]] = []
            least = 0
            for request in claim.spec.requests:
                if request.exactly is not None:
                    options = [self._prepared(index, request.name, "", request.exactly)]
                else:
                    options = [
                        self._prepared(index, request.name, sub.name, sub)
                        for sub in request.first_available
                    ]
                least += min(option.count for option in options)
                per_claim.append(options)
            if least > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {claim.key}: number of requested devices {least} exceeds the "
                    f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            self.requests.append(per_claim)

    def _prepared(self, claim: int, base: str, sub: str, spec: DeviceSubRequest) -> _Request:
        name = f"{base}/{sub}" if sub else base
        device_class = self.allocator.classes.get(spec.device_class)
        if device_class is None:
            raise AllocationError(
                f"request {name}: device class {spec.device_class} does not exist"
            )
        request = _Request(claim, name, base, sub, spec, device_class, spec.count)
        if spec.allocation_mode == ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {self.claims[claim].key}, request {name}: asks for all "
                        f"devices, but resource pool {pool.driver}/{pool.name} is currently "
                        "being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {self.claims[claim].key}, request {name}: asks for all "
                        f"devices, but resource pool {pool.driver}/{pool.name} is currently "
                        "invalid"
                    )
                for candidate in self._devices(pool):
                    if self._selectable(request, candidate):
                        request.all_devices.append(candidate)
            request.count = len(request.all_devices)
        return request

    @staticmethod
    def _devices(pool: Pool) -> list[_Candidate]:
        return [
            _Candidate((pool.driver, pool.name, device.name), device, s)
            for s in pool.slices
            for device in s.devices
        ]

    def _selectable(self, request: _Request, candidate: _Candidate) -> bool:
        key = (request.claim, request.name, candidate.device_id)
        known = self.matches.get(key)
        if known is not None:
            return known
        driver = candidate.device_id[0]
        verdict = True
        for owner, expressions in (
            (f"class {request.device_class.name}", request.device_class.selectors),
            (f"claim {self.claims[request.claim].key}", request.spec.selectors),
        ):
            for i, expression in enumerate(expressions):
                try:
                    if not device_matches(compile_selector(expression), driver, candidate.device):
                        verdict = False
                        break
                except SelectorError as exc:
                    raise AllocationError(
                        f"{owner}: selector #{i} on device {'/'.join(candidate.device_id)}: {exc}"
                    ) from None
            if not verdict:
                break
        self.matches[key] = verdict
        return verdict

    def _in_use(self, request: _Request, device_id: DeviceId) -> bool:
        if request.spec.admin_access:
            return request.claim in self.choosing.get(device_id, ())
        return device_id in self.allocator.in_use or device_id in self.choosing

    def _take(self, request: _Request, candidate: _Candidate, must: bool) -> bool:
        """Choose ``candidate`` for ``request`` if it is free and keeps the constraints."""
        if self._in_use(request, candidate.device_id):
            return False
        added: list[_MatchAttribute] = []
        for constraint in self.constraints[request.claim]:
            if not constraint.add(request.base, request.sub, candidate):
                for undo in added:
                    undo.remove(request.base, request.sub)
                if must:
                    raise AllocationError(
                        f"claim {self.claims[request.claim].key}, request {request.name}: "
                        f"cannot add device {'/'.join(candidate.device_id)} because a claim "
                        "constraint would not be satisfied"
                    )
                return False
            added.append(constraint)
        self.choosing.setdefault(candidate.device_id, set()).add(request.claim)
        self.results[request.claim].append((request.name, candidate, request.spec.admin_access))
        return True

    def _give_back(self, request: _Request, candidate: _Candidate) -> None:
        self.results[request.claim].pop()
        owners = self.choosing[candidate.device_id]
        owners.discard(request.claim)
        if not owners:
            del self.choosing[candidate.device_id]
        for constraint in self.constraints[request.claim]:
            constraint.remove(request.base, request.sub)

    def run(self) -> list[tuple[DeviceResult, ...]] | None:
        if not self._claim(0):
            return None
        return [
            tuple(
                DeviceResult(name, *candidate.device_id, admin_access=admin)
                for name, candidate, admin in results
            )
            for results in self.results
        ]

    def _claim(self, claim: int) -> bool:
        if claim == len(self.claims):
            return True
        return self._request(claim, 0)

    def _request(self, claim: int, index: int) -> bool:
        if index == len(self.requests[claim]):
            return self._claim(claim + 1)
        for option in self.requests[claim][index]:  # firstAvailable: in order
            if self._device(option, index, 0):
                return True
        return False

    def _device(self, request: _Request, index: int, nth: int) -> bool:
        if self.deadline is not None:
            self.steps += 1
            if self.steps & 15 == 1 and self.allocator.clock() > self.deadline:
                raise AllocationTimeout
        if request.spec.allocation_mode == ALL and not request.all_devices:
            return False
        if nth == request.count:
            return self._request(request.claim, index + 1)
        if len(self.results[request.claim]) + request.count - nth > ALLOCATION_RESULTS_MAX_SIZE:
            return False
        if request.spec.allocation_mode == ALL:
            candidate = request.all_devices[nth]
            if not self._take(request, candidate, must=True):
                return False
            if self._device(request, index, nth + 1):
                return True
            self._give_back(request, candidate)
            return False
        for pool in self.pools:
            if not pool.usable:
                continue
            for candidate in self._devices(pool):
                if self._in_use(request, candidate.device_id):
                    continue
                if not self._selectable(request, candidate):
                    continue
                if not self._take(request, candidate, must=False):
                    continue
                if self._device(request, index, nth + 1):
                    return True
                self._give_back(request, candidate)
        return False
