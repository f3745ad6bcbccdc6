"""Submit sagas to the work queue: record each as ``queued``, then put it on the queue.

The saga is written to the checkpointer first, as an input-only checkpoint: the graph's
``__start__`` wrote the saga's input (with status ``queued``), and the saga's first step is
next. ``status`` and ``list`` see it at once; a worker continues it exactly as ``resume``
continues a saga that stopped before its first step (:func:`aresume_saga`). Then one
persistent message per saga goes on the durable queue, confirmed by the broker.

Nothing is left half-submitted: a saga whose message could not be published is deleted
from the checkpointer again before the error (one line) is raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.constants import START

from sagagraph.errors import InputError
from sagagraph.graph.runner import (
    SagaApp,
    _check_fail_at,
    check_storable_input,
    initial_state,
    saga_config,
)
from sagagraph.graph.work_queue import PublishError, publish_jobs, queue_address
from sagagraph.saga.ids import new_saga_id, validate_saga_id
from sagagraph.saga.view import QUEUED


class SagaRequest(NamedTuple):
    """One saga to submit."""

    input: Mapping[str, Any]
    """The saga's input (small: paths and parameters)."""
    saga_id: str | None = None
    """Its id (default: a new one)."""
    fail_at: str | None = None
    """Step into which a failure is injected, for demos and tests."""


def queued_state(saga_id: str, request: SagaRequest, queue: str) -> dict[str, Any]:
    """The values of a queued saga's input checkpoint; the input names the queue it is on."""
    saga_input = dict(request.input) | {"queue": queue}
    return initial_state(saga_id, saga_input, fail_at=request.fail_at) | {"status": QUEUED}


def submit_sagas(
    app: SagaApp, requests: Sequence[SagaRequest], *, queue: str | None = None
) -> list[str]:
    """Submit sagas to the work queue at ``queue`` (default ``SAGAGRAPH_QUEUE``); their ids.

    ``app`` is the saga graph compiled with the checkpointer the workers share (PostgreSQL
    for workers on several machines). Every id is checked first (new, well formed) and every
    ``fail_at`` names a step; then all are recorded ``queued``, then published.
    """
    address = queue_address(queue)
    ids = [validate_saga_id(r.saga_id or new_saga_id()) for r in requests]
    if len(set(ids)) != len(ids):
        raise InputError("submit: the same saga id was given twice")
    for saga_id, request in zip(ids, requests, strict=True):
        _check_fail_at(app, request.fail_at)
        check_storable_input(request.input)
        if app.get_state(saga_config(saga_id)).values:
            raise InputError(f"saga {saga_id!r}: already exists; pick another id")
    written: list[str] = []
    try:
        for saga_id, request in zip(ids, requests, strict=True):
            values = queued_state(saga_id, request, address.name)
            cast_app: Any = app  # update_state is not part of the SagaApp protocol
            cast_app.update_state(saga_config(saga_id), values, as_node=START)
            written.append(saga_id)
        asyncio.run(publish_jobs(address, ids))
    except PublishError as error:
        _forget(app, [i for i in written if i not in error.published])
        raise
    except BaseException:
        _forget(app, written)
        raise
    return ids


def submit_saga(
    app: SagaApp,
    input: Mapping[str, Any],
    *,
    saga_id: str | None = None,
    fail_at: str | None = None,
    queue: str | None = None,
) -> str:
    """Submit one saga to the work queue; its id. See :func:`submit_sagas`."""
    return submit_sagas(app, [SagaRequest(input, saga_id, fail_at)], queue=queue)[0]


def _forget(app: SagaApp, saga_ids: Sequence[str]) -> None:
    """Delete sagas recorded ``queued`` whose message never reached the queue."""
    for saga_id in saga_ids:
        app.checkpointer.delete_thread(saga_id)
