"""``open_bus(url)``: the event bus a URL names (memory, SQLite log, RabbitMQ), imported lazily."""

from __future__ import annotations

from pathlib import Path

from sagagraph.checkpoints.factory import redact_url
from sagagraph.choreography.bus import EventBus
from sagagraph.errors import ConfigurationError


def open_bus(url: str, *, state_dir: str | Path | None = None, create: bool = True) -> EventBus:
    """The bus a URL names.

    ``state_dir`` is where RabbitMQ agents keep their inbox files (default
    ``./sagagraph-agents``); log backends keep them in the log itself. With ``create=False``
    a missing SQLite file is not created (reads then find nothing).
    """
    if url == "memory" or url.startswith("memory://"):
        from sagagraph.choreography.memory_bus import MemoryBus

        return MemoryBus()
    if url.startswith("sqlite:///"):
        from sagagraph.choreography.sqlite_bus import SqliteBus

        return SqliteBus(url, create=create)
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("amqp", "amqps"):
        from sagagraph.choreography.rabbitmq_bus import RabbitBus

        return RabbitBus(url, state_dir=state_dir)
    raise ConfigurationError(
        f"bus url {redact_url(url)!r}: expected memory://, sqlite:///PATH or amqp://..."
    )
