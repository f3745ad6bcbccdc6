"""``open_checkpointer(url)``: the real LangGraph checkpointers, chosen by URL.

- ``sqlite:///path/to/file.sqlite`` (the default: ``sqlite:///sagagraph.sqlite``),
- ``memory://`` (one process, nothing kept),
- ``postgresql://user@host:5432/db`` (shared by many processes on many machines).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from sagagraph.errors import ConfigurationError

DEFAULT_DB_URL = "sqlite:///sagagraph.sqlite"


def default_db_url() -> str:
    """``SAGAGRAPH_DB`` if set, else a SQLite file in the working directory."""
    return os.environ.get("SAGAGRAPH_DB") or DEFAULT_DB_URL


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***``, safe for logs and errors."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable url>"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def sqlite_path(url: str) -> Path:
    """The file a ``sqlite:///`` URL names (``sqlite:///rel.db`` or ``sqlite:////abs.db``)."""
    path = url[len("sqlite:///") :]
    if not path:
        raise ConfigurationError(f"checkpointer url {url!r}: no file path after sqlite:///")
    return Path(path)


@contextmanager
def open_checkpointer(url: str | None = None) -> Iterator[BaseCheckpointSaver[str]]:
    """Open the checkpointer a URL names; close it on exit.

    Tables are created when missing. Errors name the URL (with its password hidden).
    """
    url = url or default_db_url()
    scheme = url.split(":", 1)[0].lower()
    if url.startswith("memory://") or url == "memory":
        yield InMemorySaver()
    elif url.startswith("sqlite:///"):
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = sqlite_path(url)
        if path.parent and not path.parent.exists():
            raise ConfigurationError(f"checkpointer url {url!r}: folder {path.parent} is missing")
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        try:
            sqlite_saver = SqliteSaver(conn)
            sqlite_saver.setup()
            yield sqlite_saver
        finally:
            conn.close()
    elif scheme in ("postgresql", "postgres"):
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg import OperationalError
        except ImportError:  # pragma: no cover - depends on installed extras
            raise ConfigurationError(
                "postgres checkpointer needs the extra: pip install 'sagagraph[postgres]'"
            ) from None
        try:
            cm = PostgresSaver.from_conn_string(url)
            saver = cm.__enter__()
        except OperationalError as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else "unreachable"
            raise ConfigurationError(
                f"checkpointer url {redact_url(url)!r}: cannot connect: {first}"
            ) from None
        try:
            saver.setup()
            yield saver
        finally:
            cm.__exit__(None, None, None)
    else:
        raise ConfigurationError(
            f"checkpointer url {redact_url(url)!r}: expected sqlite:///PATH, memory:// "
            "or postgresql://..."
        )
