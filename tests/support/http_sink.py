"""An HTTP server on 127.0.0.1 that records every request and answers 200: an OTLP collector
or a LangSmith endpoint as a test sees them."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class HttpSink:
    url: str
    requests: list[Received] = field(default_factory=list)

    def bodies(self, path: str) -> list[bytes]:
        return [r.body for r in self.requests if r.method == "POST" and r.path == path]


@contextmanager
def http_sink(json_reply: object = None) -> Iterator[HttpSink]:
    """A running sink; every answer is 200 with ``json_reply`` as JSON (or an empty body)."""
    reply = b"" if json_reply is None else json.dumps(json_reply).encode()
    sink = HttpSink(url="")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with lock:
                sink.requests.append(
                    Received(self.command, self.path.split("?")[0], dict(self.headers), body)
                )
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if reply else "text/plain")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        do_GET = do_POST = do_PUT = do_PATCH = _record

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    sink.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield sink
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
