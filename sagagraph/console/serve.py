"""``sagagraph console``: serve the web console with uvicorn until interrupted."""

from __future__ import annotations

import argparse
import sys

from sagagraph.errors import ConfigurationError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def cmd_console(args: argparse.Namespace) -> int:
    """Serve the console on ``--host``/``--port`` over ``--db`` and ``--bus``."""
    try:
        import uvicorn

        from sagagraph.console.app import create_app
    except ImportError as missing:
        raise ConfigurationError(
            f"the console needs its extra ({missing.name} is missing): "
            "pip install 'sagagraph[console]'"
        ) from None
    from sagagraph.checkpoints.factory import redact_url
    from sagagraph.console.security import Guard
    from sagagraph.console.source import SagaSource

    guard = Guard.for_binding(args.host, args.port, args.token_file)
    source = SagaSource.from_urls(args.db, args.bus)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"sagagraph console on http://{shown}:{args.port}/ "
        f"(sagas of {redact_url(source.settings.db)}; Ctrl-C stops it)",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(
        create_app(source, guard),
        host=args.host,
        port=args.port,
        log_level="debug" if args.debug else "warning",
        server_header=False,
    )
    return 0
