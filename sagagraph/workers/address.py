"""Where the work queue is: the broker URL, the queue's name and its delivery limit.

``SAGAGRAPH_QUEUE`` (or ``--queue``) is an AMQP URL, ``amqp://user:pw@host/vhost?queue=NAME``;
two parameters belong to sagagraph and are not sent to the broker: ``queue`` (default
:data:`DEFAULT_QUEUE_NAME`) and ``max_deliveries`` (default :data:`DEFAULT_MAX_DELIVERIES`),
the deliveries of one saga before it is dead-lettered.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sagagraph.checkpoints.urls import redact_text, redact_url
from sagagraph.errors import BusError, ConfigurationError
from sagagraph.saga.view import describe_error

QUEUE_ENV = "SAGAGRAPH_QUEUE"
"""Environment variable with the queue URL, when ``--queue`` is not given."""
DEFAULT_QUEUE_URL = "amqp://guest:guest@127.0.0.1:5672/"
DEFAULT_QUEUE_NAME = "sagagraph.sagas"
DEFAULT_MAX_DELIVERIES = 3
"""Deliveries of one saga before it is dead-lettered: a saga that kills three workers stops."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


@dataclass(frozen=True)
class QueueAddress:
    """Where the work queue is: the broker, the queue's name and its delivery limit."""

    connect_url: str
    """The broker URL without sagagraph's parameters (it may hold a password: never show it)."""
    shown: str
    """The URL with its password hidden, for messages and logs."""
    name: str
    """The queue's name (Celery's queue, exchange and routing key)."""
    max_deliveries: int
    """Deliveries of one saga before it is dead-lettered."""
    url: str
    """The URL as given (with sagagraph's parameters): what a worker is started with."""

    def error(self, what: str, error: BaseException) -> BusError:
        """One line naming the queue (password hidden), what failed and why."""
        cause = redact_text(describe_error(error), self.connect_url)
        return BusError(f"queue {self.shown!r}: {what}: {cause}")


def queue_address(url: str | None = None) -> QueueAddress:
    """The queue a URL names (default: ``SAGAGRAPH_QUEUE``, else the local RabbitMQ)."""
    url = url or os.environ.get(QUEUE_ENV, "").strip() or DEFAULT_QUEUE_URL
    shown = redact_url(url)
    parts = urlsplit(url)
    if parts.scheme not in ("amqp", "amqps"):
        raise ConfigurationError(f"queue url {shown!r}: expected amqp://user:password@host/")
    name, max_deliveries, kept = DEFAULT_QUEUE_NAME, str(DEFAULT_MAX_DELIVERIES), []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "queue":
            name = value
        elif key == "max_deliveries":
            max_deliveries = value
        else:
            kept.append((key, value))
    if not _NAME.match(name):
        raise ConfigurationError(
            f"queue url {shown!r}: queue name {name!r} must be letters, digits, '_', '.' and '-'"
        )
    if not max_deliveries.isdigit() or int(max_deliveries) < 1:
        raise ConfigurationError(
            f"queue url {shown!r}: max_deliveries must be a whole number >= 1, "
            f"got {max_deliveries!r}"
        )
    connect_url = urlunsplit(parts._replace(query=urlencode(kept)))
    return QueueAddress(connect_url, shown, name, int(max_deliveries), url)
