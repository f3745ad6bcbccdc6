"""Reaching the local services tests need: PostgreSQL and RabbitMQ at their standard addresses.

Under ``CI=true`` a test whose service is unreachable fails; elsewhere it skips with the reason.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PG_ADMIN_URL = os.environ.get("SAGAGRAPH_TEST_PG", "postgresql://root@127.0.0.1:5432/test")
AMQP_URL = os.environ.get("SAGAGRAPH_TEST_AMQP", "amqp://guest:guest@127.0.0.1:5672/")
CORPUS = Path(
    os.environ.get("SAGAGRAPH_CORPUS", Path(__file__).resolve().parents[2] / "shared" / "corpus")
)


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


def require_postgres() -> str:
    """The admin URL of the local PostgreSQL, or skip/fail."""
    reason = port_open("127.0.0.1", 5432)
    if reason:
        unavailable("PostgreSQL at 127.0.0.1:5432", reason)
    return PG_ADMIN_URL


def require_rabbitmq() -> str:
    """The AMQP URL of the local RabbitMQ, or skip/fail."""
    reason = port_open("127.0.0.1", 5672)
    if reason:
        unavailable("RabbitMQ at 127.0.0.1:5672", reason)
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
