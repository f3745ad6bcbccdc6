"""``sagagraph console``: the web console over ``--db`` and ``--bus``, acting on the work queue
at ``--queue`` (:mod:`sagagraph.console`)."""

from __future__ import annotations

import argparse

from sagagraph.errors import ConfigurationError


def cmd_console(args: argparse.Namespace) -> int:
    """Serve the console on ``--host``/``--port`` until interrupted."""
    try:
        import uvicorn  # noqa: F401

        from sagagraph.console.security import Guard
        from sagagraph.console.serve import serve
        from sagagraph.console.source import SagaSource
    except ImportError as missing:
        raise ConfigurationError(
            f"the console needs its extra ({missing.name} is missing): "
            "make extra EXTRA=console, in the checkout"
        ) from None
    guard = Guard.for_binding(args.host, args.port, args.token_file)
    if args.queue:
        from sagagraph.workers.address import queue_address

        queue_address(args.queue)  # a malformed URL is one line now, not at the first cancel
    serve(
        SagaSource.from_urls(args.db, args.bus, args.queue),
        guard,
        args.host,
        args.port,
        debug=args.debug,
    )
    return 0
