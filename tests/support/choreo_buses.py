"""Event buses for choreography tests: every backend, each fresh and cleaned up afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sagagraph.choreography.bus import EventBus
from sagagraph.choreography.buses import open_bus
from sagagraph.choreography.topology import derive_choreography
from tests.support.choreo_saga import file_saga
from tests.support.services import require_rabbitmq

BACKENDS = ["memory", "sqlite", pytest.param("amqp", marks=pytest.mark.rabbitmq)]


def unique_amqp_url(base: str) -> str:
    """The local broker's URL with a namespace of its own (exchanges and queues prefixed)."""
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}namespace=test-{uuid.uuid4().hex[:10]}"


def bus_url_for(kind: str, tmp_path: Path) -> str:
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'events.sqlite'}"
    return unique_amqp_url(require_rabbitmq())


@contextmanager
def cleaned_up(url: str, tmp_path: Path) -> Iterator[EventBus]:
    """The bus at ``url``; on exit, a RabbitMQ namespace's exchanges and queues are deleted.

    Those of the paper saga too: agents in other processes declare its queues, which the bus
    of this process never prepared, and a test's namespace must not outlive the test.
    """
    bus = open_bus(url, state_dir=tmp_path / "agents")
    try:
        yield bus
    finally:
        delete: Any = getattr(bus, "delete", None)
        if delete is not None:
            delete([derive_choreography(file_saga(tmp_path / "topology-to-delete"))])
        bus.close()


@contextmanager
def fresh_bus(kind: str, tmp_path: Path) -> Iterator[EventBus]:
    with cleaned_up(bus_url_for(kind, tmp_path), tmp_path) as bus:
        yield bus
