"""What the broker says about the work queue, and removing it (tests and benchmarks)."""

from __future__ import annotations

from typing import NamedTuple

from sagagraph.workers.address import QueueAddress

CONNECT_TIMEOUT = 10.0
"""Seconds a broker has to answer before reading the queue gives up."""


class QueueCounts(NamedTuple):
    ready: int
    """Messages waiting for a worker (not those a worker holds)."""
    consumers: int
    """Worker slots consuming the queue now."""


def queue_counts(address: QueueAddress) -> QueueCounts:
    """The queue's counts; zero for a queue nobody has declared yet."""
    from kombu import Connection

    try:
        with Connection(address.connect_url, connect_timeout=CONNECT_TIMEOUT) as connection:
            channel = connection.channel()
            try:
                _, ready, consumers = channel.queue_declare(address.name, passive=True)
            except Exception as error:
                if getattr(error, "code", None) == 404:  # NOT_FOUND: nothing submitted yet
                    return QueueCounts(0, 0)
                raise
    except Exception as error:
        raise address.error("cannot read the queue", error) from None
    return QueueCounts(int(ready), int(consumers))


def delete_queue(address: QueueAddress) -> None:
    """Delete the work queue and its exchange."""
    from kombu import Connection

    with Connection(address.connect_url, connect_timeout=CONNECT_TIMEOUT) as connection:
        channel = connection.channel()
        channel.queue_delete(address.name)
        channel.exchange_delete(address.name)
