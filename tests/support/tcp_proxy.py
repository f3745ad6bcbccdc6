"""A TCP proxy on 127.0.0.1 that can cut every connection through it for a while.

Tests put it between the code and RabbitMQ to simulate a network cut without touching the
broker (others use it): :meth:`TcpProxy.cut` closes every open connection and refuses new
ones (accepted, then closed at once) for ``seconds``, then lets connections through again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit


def through(url: str, port: int) -> str:
    """``url`` (PostgreSQL, AMQP; credentials, path and query kept) pointed at a proxy on
    127.0.0.1:``port``."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host))


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._cut_until = 0.0
        self._closing = False
        self.cuts = 0
        """Connections closed or refused by cuts so far."""
        self._acceptor = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)
        self._acceptor.start()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def cut(self, seconds: float) -> None:
        """Drop every connection now and refuse new ones for ``seconds``."""
        with self._lock:
            self._cut_until = time.monotonic() + seconds
            dropped, self._open = self._open, []
            self.cuts += len(dropped)
        for sock in dropped:
            _close(sock)

    def _cutting(self) -> bool:
        return time.monotonic() < self._cut_until

    def _accept(self) -> None:
        while not self._closing:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self._cutting():
                with self._lock:
                    self.cuts += 1
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _close(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def close(self) -> None:
        self._closing = True
        _close(self._server)
        with self._lock:
            dropped, self._open = self._open, []
        for sock in dropped:
            _close(sock)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _close(source)
        _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
