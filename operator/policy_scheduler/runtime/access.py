"""Can these credentials use the cluster? One line saying what is wrong, and what to do.

``run`` and ``explain`` reach the API server with a kubeconfig (or a pod's service
account). What goes wrong first for a newcomer goes wrong there: no answer at the
server's address, credentials refused (401), a permission missing (403). Each becomes an
:class:`AccessError` whose message names the server and the next step; the CLI prints
it as ``error: ...`` and exits 1, instead of a traceback or an operator that retries a
LIST forever.

:func:`check_access` is ``run``'s first call: one LIST of pods (the first thing the
scheduler needs, cluster-wide), with the usual deadline and retries. Only what retrying
cannot fix ends it: no answer at all (the address), 401, 403, another 4xx. A busy or
restarting API server (429, 5xx) is retried with capped exponential backoff (1 s
doubling to 30 s, jittered; a 429's ``Retry-After`` honoured by the client), each retry
logged on one line, for as long as it takes, as client-go's informers do. Once it went
through, a later failure is the running operator's to retry, not a reason to exit.
``explain`` turns the failure of its own LISTs into the same message
(:func:`access_error`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable

from ..kinds import POD
from .kubeapi import RETRYABLE, ApiError, KubeApi, backoff

logger = logging.getLogger(__name__)

#: Statuses a later attempt may not meet (a busy or restarting API server). No answer
#: at all (0) is not one: at startup it means a wrong address far more often.
TRANSIENT = RETRYABLE - {0}


class AccessError(Exception):
    """The cluster cannot be used with these credentials; the message says what to do."""


def access_error(exc: ApiError, api: KubeApi, *, needs: str) -> AccessError:
    """The one line for a call of ``api`` that failed: what, where, and the next step.

    ``needs`` says who needs which permission, for a 403 ("the scheduler's service
    account needs the chart's ClusterRole").
    """
    server = api.api_client.configuration.host or "(no server in the configuration)"
    timeout = api.timeout
    reason = f" ({exc.reason})" if exc.reason else ""
    if exc.status == 0:
        text = (
            f"{exc.what}: no answer from the Kubernetes API server at {server} (refused, "
            f"unreachable, or silent for {timeout:g} s): is the cluster running, and does the "
            "kubeconfig point at it? (`kubectl cluster-info` says where it looks)"
        )
    elif exc.status == 401:
        text = (
            f"{exc.what}: the API server at {server} refused the credentials (401 "
            f"Unauthorized){reason}: log in again or renew the kubeconfig's token or "
            "certificate (`kubectl auth whoami` checks them)"
        )
    elif exc.status == 403:
        text = (
            f"{exc.what}: forbidden (403){reason}: {needs} "
            "(`kubectl auth can-i --list` shows what these credentials may do)"
        )
    else:
        text = f"{exc.what}: HTTP {exc.status} from the API server at {server}{reason}"
    return AccessError(text)


async def check_access(
    api: KubeApi, *, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
) -> None:
    """One page of pods, or :class:`AccessError`: the server answers and lets us in.

    A transient failure (429, 5xx) is waited out, never an exit (module docstring)."""
    attempt = 0
    while True:
        try:
            await _first_page(api)
            return
        except ApiError as exc:
            error = access_error(
                exc,
                api,
                needs="the scheduler's account needs the permissions of the chart's "
                "ClusterRole (charts/policy-scheduler/templates; `policy-scheduler run` "
                "lists every pod, cluster-wide)",
            )
            if exc.status not in TRANSIENT:
                raise error from None
        attempt += 1
        delay = backoff(attempt, base=1.0, cap=30.0)
        logger.warning("%s; trying again in %.1f s", error, delay)
        await sleep(delay)


async def _first_page(api: KubeApi) -> None:
    pages = api.list_pages(POD)
    try:
        await anext(pages, None)
    finally:
        if isinstance(pages, AsyncGenerator):
            await pages.aclose()


__all__ = ["AccessError", "access_error", "check_access"]
