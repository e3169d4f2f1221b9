"""Pods a Permit plugin holds: assumed on their node, waiting to be allowed or rejected.

kube-scheduler's ``waitingPodsMap``, in asyncio. A :class:`WaitingPod` is made when a
pod's Permit plugins answered Wait (each with its timeout, capped at 15 minutes); its
:attr:`outcome` future is resolved exactly once:

* every waiting plugin called :meth:`WaitingPod.allow` -> Success;
* one called :meth:`WaitingPod.reject`, or its timeout passed -> Unschedulable, with the
  plugin and its message (``rejected due to timeout after waiting 30s at plugin
  Coscheduling`` for a timeout).

The first resolution wins (later calls change nothing), as upstream's one-slot channel.
Timers are scheduled through ``call_later`` (the event loop's by default), so that
``simulate`` can run them on its own clock, or not at all, and settle what is still
waiting when it ends (:meth:`WaitingPods.expire_all`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from ..names import MAX_PERMIT_WAIT_SECONDS
from ..objects import Pod
from .interface import Code, Status


class Timer(Protocol):
    """A timer that can be called off (``asyncio.TimerHandle``)."""

    def cancel(self) -> None: ...


#: ``call_later(seconds, callback) -> Timer``.
Scheduler = Callable[[float, Callable[[], None]], Timer]


def _loop_call_later(seconds: float, callback: Callable[[], None]) -> Timer:
    return asyncio.get_running_loop().call_later(seconds, callback)


def timeout_message(seconds: float, plugin: str) -> str:
    return f"rejected due to timeout after waiting {_duration(seconds)} at plugin {plugin}"


def _duration(seconds: float) -> str:
    """Seconds as Go prints a time.Duration of whole seconds or minutes (30s, 15m0s)."""
    whole = int(seconds)
    if whole != seconds:
        return f"{seconds:g}s"
    minutes, rest = divmod(whole, 60)
    if not minutes:
        return f"{rest}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m{rest}s" if hours else f"{minutes}m{rest}s"


class WaitingPod:
    """One pod held at Permit (the public :class:`~.interface.WaitingPod`)."""

    def __init__(
        self,
        pod: Pod,
        node_name: str,
        timeouts: dict[str, float],
        *,
        call_later: Scheduler,
        on_done: Callable[[WaitingPod], None] | None = None,
    ) -> None:
        self._pod = pod
        self._node_name = node_name
        self.outcome: asyncio.Future[Status] = asyncio.get_running_loop().create_future()
        self._on_done = on_done
        self._pending: dict[str, Timer] = {}
        #: When each plugin's wait ends (monotonic, for the WaitingOnPermit event).
        self.timeouts = {plugin: min(t, MAX_PERMIT_WAIT_SECONDS) for plugin, t in timeouts.items()}
        for plugin, seconds in self.timeouts.items():
            self._pending[plugin] = call_later(
                seconds,
                lambda plugin=plugin, seconds=seconds: self.reject(  # type: ignore[misc]
                    plugin, timeout_message(seconds, plugin)
                ),
            )

    @property
    def pod(self) -> Pod:
        return self._pod

    @property
    def node_name(self) -> str:
        return self._node_name

    @property
    def done(self) -> bool:
        return self.outcome.done()

    def pending_plugins(self) -> list[str]:
        return list(self._pending)

    def allow(self, plugin: str) -> None:
        timer = self._pending.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        if not self._pending:
            self._resolve(Status())

    def reject(self, plugin: str, message: str) -> None:
        for timer in self._pending.values():
            timer.cancel()
        self._resolve(Status(Code.UNSCHEDULABLE, (message,), plugin))

    def _resolve(self, status: Status) -> None:
        if self.outcome.done():
            return
        self.outcome.set_result(status)
        if self._on_done is not None:
            self._on_done(self)


class WaitingPods:
    """The waiting pods of one scheduler, by uid (the Handle's iterate / get / reject)."""

    def __init__(self, call_later: Scheduler = _loop_call_later) -> None:
        self._pods: dict[str, WaitingPod] = {}
        self.call_later = call_later

    def add(self, pod: Pod, node_name: str, timeouts: dict[str, float]) -> WaitingPod:
        waiting = WaitingPod(
            pod, node_name, timeouts, call_later=self.call_later, on_done=self._forget
        )
        self._pods[pod.uid] = waiting
        return waiting

    def _forget(self, waiting: WaitingPod) -> None:
        if self._pods.get(waiting.pod.uid) is waiting:
            del self._pods[waiting.pod.uid]

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)

    def discard(self, waiting: WaitingPod) -> None:
        """Forget a waiting pod without an outcome (its gang was given up before anyone
        waited on it): its timers are called off."""
        for timer in waiting._pending.values():
            timer.cancel()
        waiting._pending.clear()
        self._forget(waiting)

    def reject(self, uid: str, plugin: str, message: str) -> bool:
        waiting = self._pods.get(uid)
        if waiting is None:
            return False
        waiting.reject(plugin, message)
        return True

    def expire_all(self) -> None:
        """Time out every pod still waiting (``simulate``'s end: no more time passes)."""
        for waiting in list(self._pods.values()):
            plugin = next(iter(waiting.pending_plugins()), "")
            waiting.reject(plugin, timeout_message(waiting.timeouts.get(plugin, 0.0), plugin))


class ManualTimer:
    """A timer that never fires by itself (``simulate``: waits are settled explicitly)."""

    __slots__ = ()

    def cancel(self) -> None:
        return None


def manual_call_later(seconds: float, callback: Callable[[], Any]) -> Timer:
    return ManualTimer()
