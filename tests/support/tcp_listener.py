"""A TCP listener on 127.0.0.1 standing in for a broker that answers wrongly or not at all."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def listener(reply: bytes | None) -> Iterator[int]:
    """A port that accepts every connection; reads the client's first bytes, then sends
    ``reply`` and closes, or, when ``reply`` is None, holds the connection and stays silent."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                conn = server.accept()[0]
            except OSError:
                continue
            if reply is None:
                held.append(conn)
                continue
            with conn:
                conn.settimeout(5)
                conn.recv(8)
                conn.sendall(reply)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        done.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        server.close()
