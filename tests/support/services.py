"""Reaching the local services tests need: PostgreSQL and RabbitMQ at their standard addresses.

Under ``CI=true`` a test whose service is unreachable fails; elsewhere it skips with the reason.
"""

from __future__ import annotations

import functools
import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PG_ADMIN_URL = os.environ.get("SAGAGRAPH_TEST_PG", "postgresql://root@127.0.0.1:5432/test")
AMQP_URL = os.environ.get("SAGAGRAPH_TEST_AMQP", "amqp://guest:guest@127.0.0.1:5672/")
CORPUS = Path(
    os.environ.get("SAGAGRAPH_CORPUS", Path(__file__).resolve().parents[3] / "shared" / "corpus")
)
CORPUS_NEXT = Path(os.environ.get("SAGAGRAPH_CORPUS_NEXT", CORPUS.parent / "corpus-next"))
"""The second folder of real PDFs (hard kinds: capitals, proposals, theses), beside the corpus."""


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(service: str, reason: str) -> None:
    """Fail under CI, skip elsewhere."""
    message = f"{service} unreachable: {reason}"
    if in_ci():
        pytest.fail(message)
    pytest.skip(message)


def port_open(host: str, port: int, timeout: float = 2.0) -> str | None:
    """None when something listens at host:port, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as error:
        return str(error)


def refuse_unmarked(service: str, marker: str) -> None:
    """Fail a test that reaches ``service`` in a run that promised none (`make check` sets
    ``SAGAGRAPH_TEST_SERVICES=none``): the test lacks its ``marker``, so the fast loop would
    depend on a service, or skip it silently where none runs."""
    if os.environ.get("SAGAGRAPH_TEST_SERVICES", "").lower() == "none":
        pytest.fail(f"this test reaches {service} but is not marked `{marker}`")


def require_postgres() -> str:
    """The admin URL of the local PostgreSQL, or skip/fail."""
    refuse_unmarked("PostgreSQL", "postgres")
    reason = port_open("127.0.0.1", 5432)
    if reason:
        unavailable("PostgreSQL at 127.0.0.1:5432", reason)
    return PG_ADMIN_URL


# The broker's answer to a client's protocol header is its Connection.Start method frame: a
# frame of type 1 on channel 0. A broker that accepts TCP but is too busy (or wedged) to answer
# fails every test that uses it with a connect timeout; asking once here names that cause.
AMQP_HEADER = b"AMQP\x00\x00\x09\x01"
BROKER_PATIENCE = 60.0


def amqp_answers(host: str, port: int, patience: float = BROKER_PATIENCE) -> str | None:
    """None when an AMQP broker at host:port answers a protocol header, else why not.

    Retries for up to ``patience`` seconds, so a broker still starting (or briefly busy) gets
    time before the tests that need it start.
    """
    deadline = time.monotonic() + patience
    while True:
        try:
            with socket.create_connection((host, port), timeout=10.0) as sock:
                sock.settimeout(10.0)
                sock.sendall(AMQP_HEADER)
                if sock.recv(7)[:3] == b"\x01\x00\x00":
                    return None
                reason = "it answered the AMQP protocol header with something else"
        except OSError as error:
            reason = str(error) or type(error).__name__
        if time.monotonic() >= deadline:
            return f"{reason} (tried for {patience:.0f} s)"
        time.sleep(1.0)


@functools.cache
def local_broker_silence() -> str | None:
    """Why the local broker does not answer, asked once a session; None when it does."""
    return amqp_answers("127.0.0.1", 5672)


def require_rabbitmq() -> str:
    """The AMQP URL of the local RabbitMQ, or skip/fail; the broker asked once a session."""
    refuse_unmarked("RabbitMQ", "rabbitmq")
    reason = port_open("127.0.0.1", 5672)
    if reason:
        unavailable("RabbitMQ at 127.0.0.1:5672", reason)
    silence = local_broker_silence()
    if silence:
        unavailable("RabbitMQ at 127.0.0.1:5672 (the port is open)", silence)
    return AMQP_URL


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A new, empty database for one test session; dropped afterwards."""
    import psycopg

    admin = require_postgres()
    name = f"sagagraph_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def postgres_backend_url(backend: str, url: str) -> str:
    """``url`` (``postgresql://``) as ``backend`` opens it: ``postgres`` by LangGraph's saver,
    ``postgres+group`` by the group-commit saver (``postgresql+group://``)."""
    if backend == "postgres+group":
        return url.replace("postgresql://", "postgresql+group://", 1)
    return url


@contextmanager
def saga_database(backend: str, root: Path) -> Iterator[str]:
    """A checkpointer URL no other test writes to: a SQLite file under ``root``, or a fresh
    PostgreSQL database (dropped afterwards). Recovery scans every saga in it. ``+group``
    backends open the group-commit savers."""
    if backend.startswith("sqlite"):  # sqlite, or sqlite+group (the group-commit saver)
        yield f"{backend}:///{root / 'sagas.sqlite'}"
    else:
        with fresh_postgres_database() as url:
            yield postgres_backend_url(backend, url)
