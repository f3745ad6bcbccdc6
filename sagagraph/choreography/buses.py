"""``open_bus(url)``: the event bus a URL names (memory, SQLite log, RabbitMQ), imported lazily."""

from __future__ import annotations

from pathlib import Path

from sagagraph.checkpoints.urls import redact_url
from sagagraph.choreography.bus import EventBus
from sagagraph.choreography.signing import FROM_ENVIRONMENT, BusKey, authenticator_for
from sagagraph.errors import ConfigurationError


def open_bus(
    url: str,
    *,
    state_dir: str | Path | None = None,
    create: bool = True,
    key: BusKey | str | None = FROM_ENVIRONMENT,
) -> EventBus:
    """The bus a URL names.

    ``state_dir`` is where RabbitMQ step services keep their inbox files (default
    ``./sagagraph-agents``); log backends keep them in the log itself. With ``create=False``
    a missing SQLite file is not created (reads then find nothing). ``key`` signs and checks
    its events (:mod:`.signing`): by default the environment's deployment key, if one is set;
    None runs the bus unsigned.
    """
    authenticator = authenticator_for(key)
    if url == "memory" or url.startswith("memory://"):
        from sagagraph.choreography.memory_bus import MemoryBus

        return MemoryBus(authenticator)
    if url.startswith("sqlite:///"):
        from sagagraph.choreography.sqlite_bus import SqliteBus

        return SqliteBus(url, create=create, authenticator=authenticator)
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("amqp", "amqps"):
        from sagagraph.choreography.rabbitmq_bus import RabbitBus

        return RabbitBus(url, state_dir=state_dir, authenticator=authenticator)
    raise ConfigurationError(
        f"bus url {redact_url(url)!r}: expected memory://, sqlite:///PATH or amqp://..."
    )
