"""Serving the web console with uvicorn until interrupted (:func:`serve`, what ``sagagraph
console`` runs); or, for a notebook, a test or a script, in a thread of this process
(:func:`console_in_thread`)."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sagagraph.errors import ConfigurationError

if TYPE_CHECKING:
    from sagagraph.console.security import Guard
    from sagagraph.console.source import SagaSource

DEFAULT_HOST = "127.0.0.1"


def serve(source: SagaSource, guard: Guard, host: str, port: int, *, debug: bool = False) -> None:
    """Serve the console for ``source`` on ``host``:``port`` with uvicorn until interrupted."""
    import uvicorn

    from sagagraph.checkpoints.urls import redact_url
    from sagagraph.console.app import create_app

    listener = listening_socket(host, port)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"sagagraph console on http://{shown}:{port}/ "
        f"(sagas of {redact_url(source.store.db)}; Ctrl-C stops it)",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(
        create_app(source, guard),
        log_level="debug" if debug else "warning",
        server_header=False,
    )
    with listener:
        uvicorn.Server(config).run(sockets=[listener])


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: any free port); ConfigurationError, one line,
    when the address is taken or not this machine's."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as error:
        listener.close()
        raise ConfigurationError(
            f"--host {host} --port {port}: cannot listen there ({error.strerror or error})"
        ) from None
    return listener


@contextmanager
def console_in_thread(source: SagaSource, *, host: str = DEFAULT_HOST) -> Iterator[str]:
    """Serve the console for ``source`` on a free port of ``host`` in a thread of this process
    (a notebook, a test, a screenshot script); yields its URL, stops it on leaving."""
    import threading

    import uvicorn

    from sagagraph.console.app import create_app
    from sagagraph.console.security import Guard

    listener = listening_socket(host, 0)
    port = int(listener.getsockname()[1])
    app = create_app(source, Guard.for_binding(host, port, None))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", server_header=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise ConfigurationError(f"the console did not start on {host}:{port}")
            time.sleep(0.02)
        shown = f"[{host}]" if ":" in host else host
        yield f"http://{shown}:{port}"
    finally:
        server.should_exit = True
        thread.join()
        listener.close()
