"""``sagagraph delete-namespace --bus amqp://...?namespace=N --yes``: remove what the paper saga's
choreography declared on RabbitMQ under one namespace.

That is the namespace's event log (a stream), its dead-letter exchange and queue, the paper
saga's topic exchange and one queue per step service. Events still in those queues are lost,
so the command asks for ``--yes``. Step services' inbox files (``sagagraph-agents/N.*.sqlite``
on each machine that ran one) are local files, left alone.
"""

from __future__ import annotations

import argparse

from sagagraph.cli.output import EXIT_COMPLETED
from sagagraph.cli.wiring import paper_definition, settings_from, store_from
from sagagraph.errors import ConfigurationError


def cmd_delete_namespace(args: argparse.Namespace) -> int:
    from sagagraph.checkpoints.urls import redact_url
    from sagagraph.choreography.buses import open_bus
    from sagagraph.choreography.rabbitmq_bus import RabbitBus
    from sagagraph.choreography.topology import derive_choreography

    bus_url = store_from(args).bus
    shown = redact_url(bus_url)
    if bus_url.split(":", 1)[0].lower() not in ("amqp", "amqps"):
        raise ConfigurationError(
            f"delete-namespace: bus {shown!r} is not RabbitMQ (amqp://...): a SQLite event log "
            "is a file to delete, and a memory bus ends with its process"
        )
    # A choreography's names only: rolling back needs no model, so neither does this.
    choreography = derive_choreography(paper_definition(settings_from(args)))
    bus = open_bus(bus_url, create=False, key=None)
    try:
        if not isinstance(bus, RabbitBus):  # pragma: no cover - amqp:// always opens one
            raise ConfigurationError(f"delete-namespace: bus {shown!r} is not RabbitMQ")
        topology = bus.topology
        queues = [topology.log_name, topology.dead_name] + [
            topology.queue_name(f"{choreography.saga}.{role.name}") for role in choreography.roles
        ]
        exchanges = [topology.dead_name, topology.exchange_name(choreography.saga)]
        what = f"namespace {bus.namespace!r} on {shown}"
        if not args.yes:
            raise ConfigurationError(
                f"delete-namespace: would delete {what}: queues {', '.join(queues)} and exchanges "
                f"{', '.join(exchanges)}, with any events in them; add --yes to delete them"
            )
        bus.delete([choreography])
    finally:
        bus.close()
    print(f"deleted {what}: queues {', '.join(queues)}; exchanges {', '.join(exchanges)}")
    return EXIT_COMPLETED
