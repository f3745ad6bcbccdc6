"""Workers: sagas on a Celery work queue (RabbitMQ broker), state in the shared checkpointer.

``submit_sagas`` records sagas ``queued`` and puts one task each on the queue; a Celery
worker (``sagagraph worker``, or ``celery -A sagagraph.workers.main worker``) runs them from
their recorded reference (``module:factory``) and acknowledges each only when its saga is
final. ``cancel_saga`` and ``requeue_saga`` are the operator's controls; ``take_over_orphans``
resumes sagas whose process died. Each name is imported on first use (PEP 562): Celery is
loaded only by the names that need it.
"""

from typing import TYPE_CHECKING

from sagagraph.saga import lazy_exports

if TYPE_CHECKING:
    from sagagraph.workers.address import QueueAddress, queue_address
    from sagagraph.workers.celery_app import make_celery_app
    from sagagraph.workers.control import (
        SagaRequest,
        Schedule,
        Submitted,
        cancel_saga,
        requeue_saga,
        submit_sagas,
    )
    from sagagraph.workers.watch import take_over_orphans

_EXPORTS = {
    "sagagraph.workers.address": "QueueAddress queue_address",
    "sagagraph.workers.celery_app": "make_celery_app",
    "sagagraph.workers.control": (
        "SagaRequest Schedule Submitted cancel_saga requeue_saga submit_sagas"
    ),
    "sagagraph.workers.watch": "take_over_orphans",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "QueueAddress",
    "SagaRequest",
    "Schedule",
    "Submitted",
    "cancel_saga",
    "make_celery_app",
    "queue_address",
    "requeue_saga",
    "submit_sagas",
    "take_over_orphans",
]
