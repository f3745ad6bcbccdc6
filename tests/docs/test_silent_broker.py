"""A broker whose port is open but which never answers: one line that says so, in time.

What the last CI run met: every connection to a RabbitMQ that accepted TCP and never completed
the AMQP handshake ended in ``cannot connect: TimeoutError: (no message)``. The listener here
accepts and stays silent, on 127.0.0.1, so no broker is needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sagagraph.choreography import rabbitmq_bus
from sagagraph.choreography.buses import open_bus
from sagagraph.errors import BusError
from sagagraph.workers import broker
from sagagraph.workers.address import queue_address
from tests.support.tcp_listener import listener

PATIENCE = 0.5


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never sends a byte."""
    with listener(None) as port:
        yield port


def test_the_worker_queue_names_a_silent_broker_and_how_long_it_waited(
    silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(broker, "CONNECT_TIMEOUT", PATIENCE)
    address = queue_address(f"amqp://me:hunter2@127.0.0.1:{silent_port}/?queue=q")
    with pytest.raises(BusError) as caught:
        broker.queue_counts(address)
    message = str(caught.value)
    assert "\n" not in message and "hunter2" not in message
    assert f"127.0.0.1:{silent_port}" in message
    assert "cannot read the queue" in message


def test_the_event_bus_names_a_silent_broker_and_how_long_it_waited(
    silent_port: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(rabbitmq_bus, "CONNECT_TIMEOUT", PATIENCE)
    bus = open_bus(f"amqp://me:hunter2@127.0.0.1:{silent_port}/", state_dir=tmp_path)
    try:
        with pytest.raises(BusError) as caught:
            bus.listeners("paper_review.validator")
    finally:
        bus.close()
    message = str(caught.value)
    assert "\n" not in message and "hunter2" not in message
    assert f"127.0.0.1:{silent_port}" in message
    assert "cannot connect: TimeoutError: no answer from the broker within 0.5 s" in message
