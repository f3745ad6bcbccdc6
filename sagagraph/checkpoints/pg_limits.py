"""Time limits every PostgreSQL connection of sagagraph gets, unless its URL sets its own.

Without them a server that accepts the connection and never answers (a stalled network, a
wedged proxy) makes ``run`` wait without limit, and a peer that vanished mid-saga is noticed
only when the kernel gives up on it, many minutes later. libpq's ``connect_timeout`` bounds
the connection's start; TCP keepalives and ``tcp_user_timeout`` find a dead peer during a
saga. A limit the URL gives (``?connect_timeout=30``) wins.
"""

from __future__ import annotations

CONNECTION_LIMITS: dict[str, str] = {
    "connect_timeout": "10",
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
    "tcp_user_timeout": "60000",
}
"""libpq parameters added to every connection string that does not set them (seconds, but
``tcp_user_timeout`` in milliseconds)."""


def with_connection_limits(url: str) -> str:
    """``url`` (a URL or a ``key=value`` string) with :data:`CONNECTION_LIMITS` it lacks.

    A string psycopg cannot parse is returned as it is: connecting then reports the problem.
    """
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
    except ImportError:  # pragma: no cover - depends on installed extras
        return url
    try:
        given = conninfo_to_dict(url)
    except Exception:  # psycopg.ProgrammingError: a malformed string, reported on connect
        return url
    missing = {key: value for key, value in CONNECTION_LIMITS.items() if key not in given}
    return make_conninfo(url, **missing) if missing else url
