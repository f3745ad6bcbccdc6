"""One redaction for every text that becomes an event, a reason, an error line or a log line.

Secrets never reach state, events, logs or outputs, whatever path a text took: a model
server's error that quotes the API key, a driver error that repeats a URL, a URL that does
not even parse. :func:`redact` hides:

- the values of the secret environment variables (:data:`SECRET_ENV_VARS`) and of URLs in the
  URL environment variables (:data:`URL_ENV_VARS`), and every value given to
  :func:`register_secret` (a PDF password, a key passed in code);
- anything shaped like a credential, by pattern, without parsing: ``scheme://user:pass@``,
  ``password=...``, ``Bearer ...``, ``sk-...`` and LangSmith ``lsv2_...`` keys.

:class:`RedactingFilter` applies it to log records; events and error descriptions apply it
where they are built (``make_event``, ``describe_error``), so every path gets it for free.
Importing this module adds the filter to the ``sagagraph`` logger.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from typing import Any

MASK = "***"
SECRET_ENV_VARS = (
    "OPENAI_API_KEY",
    "SAGAGRAPH_PDF_PASSWORD",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
)
"""Environment variables whose whole value is a secret."""
URL_ENV_VARS = (
    "SAGAGRAPH_DB",
    "SAGAGRAPH_AMQP_URL",
    "SAGAGRAPH_BUS",
    "OPENAI_BASE_URL",
    "SAGAGRAPH_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "LANGSMITH_ENDPOINT",
    "LANGCHAIN_ENDPOINT",
)
"""Environment variables holding URLs whose password is a secret."""
MIN_SECRET_LENGTH = 4
"""Shorter values are not searched for: masking every "ab" would garble text, not protect."""

# Patterns over the raw text, so a malformed URL (``postgresql://u:p4ss@[::1/db``) is covered.
# The password runs to the last "@" of the authority, so "u:p@ss@host" hides "p@ss".
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@]*):(?:[^\s@/]*@)+")
_PASSWORD_PARAM = re.compile(r"(?i)\b((?:pass(?:word)?|pwd|secret|api_key|apikey)=)[^&;\s]*")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s\"']+")
_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{3,}")
_LANGSMITH_KEY = re.compile(r"\blsv2_[A-Za-z0-9_*]{3,}")

_URL_PASSWORD = re.compile(r"://[^\s:/@]*:((?:[^\s@/]*@)+)")

_WATCHED_ENV_VARS = (*SECRET_ENV_VARS, *URL_ENV_VARS)
_registered: set[str] = set()
_lock = threading.Lock()
_cache: tuple[tuple[object, ...], list[str]] = ((), [])
"""The last :func:`known_secrets` answer and what it was computed from (every event's text is
redacted, so the environment's secrets are not searched for again each time)."""


def register_secret(value: str | None) -> None:
    """Hide ``value`` from every text redacted from now on, in this process."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def url_password(url: str) -> str | None:
    """The password of a ``scheme://user:pass@`` URL, found by pattern (no parsing)."""
    match = _URL_PASSWORD.search(url)
    return match.group(1)[:-1] or None if match else None


_encoded_names: tuple[object, tuple[object, ...]] = (None, ())
"""The watched variables' names as ``os.environ`` keys its own table (encoded once)."""


def _watched_env_values() -> tuple[object, ...]:
    """The watched variables' values, to tell whether the environment's secrets changed.

    Read from ``os.environ``'s own table of encoded names and values when it has one (every
    change through ``os.environ`` lands there, and ``os.putenv`` alone is not seen by
    ``os.environ`` either): fourteen dictionary lookups instead of fourteen encodings and
    decodings, since every text redacted asks (about 0.5 us instead of 13 us).
    """
    global _encoded_names
    environ = os.environ
    table = getattr(environ, "_data", None)
    encode = getattr(environ, "encodekey", None)
    if not isinstance(table, dict) or encode is None:
        return tuple(map(environ.get, _WATCHED_ENV_VARS))
    encoder, names = _encoded_names
    if encoder is not encode:
        names = tuple(map(encode, _WATCHED_ENV_VARS))
        _encoded_names = (encode, names)
    return tuple(map(table.get, names))


def known_secrets() -> list[str]:
    """Every secret value redaction hides now, longest first (a secret may contain another)."""
    global _cache
    key = (len(_registered), *_watched_env_values())
    cached_key, cached = _cache
    if cached_key == key:
        return cached
    values = set(_registered)
    for name in SECRET_ENV_VARS:
        values.add(os.environ.get(name, ""))
    for name in URL_ENV_VARS:
        values.add(url_password(os.environ.get(name, "")) or "")
    found = sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)
    _cache = (key, found)
    return found


def redact(text: str) -> str:
    """``text`` with every known secret and every credential-shaped part replaced by ``***``."""
    if not text or len(text) < MIN_SECRET_LENGTH:  # no secret nor credential pattern fits
        return text
    return _redacted(text, known_secrets())


def _redacted(text: str, secrets: list[str]) -> str:
    """:func:`redact` with the known secrets already looked up."""
    if len(text) < MIN_SECRET_LENGTH:
        return text
    for secret in secrets:
        text = text.replace(secret, MASK)
    # Each pattern runs only on a text holding the literal it cannot match without: the same
    # result, without four regular-expression scans of every event's detail.
    if "://" in text:
        text = _URL_CREDENTIALS.sub(rf"\1:{MASK}@", text)
    if "=" in text:
        text = _PASSWORD_PARAM.sub(rf"\1{MASK}", text)
    if "bearer" in text.lower():
        text = _BEARER.sub(rf"\1{MASK}", text)
    if "sk-" in text:
        text = _KEY_LIKE.sub(f"sk-{MASK}", text)
    if "lsv2_" in text:  # a LangSmith key, even the partly masked form its client prints
        text = _LANGSMITH_KEY.sub(f"lsv2_{MASK}", text)
    return text


def redact_value(value: Any) -> Any:
    """``value`` with :func:`redact` applied to every string inside it, at any depth.

    For what a step returns and writes (a model's structured answer may quote the key): mappings
    (keys and values), lists, tuples and sets are rebuilt only when something inside changed, so
    a clean value comes back as the same object and costs no copy. The known secrets are
    looked up once for the whole value, not once a text.
    """
    return _redacted_value(value, known_secrets())


def _redacted_value(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return _redacted(value, secrets)
    if isinstance(value, Mapping):
        items = [
            (_redacted_value(k, secrets), _redacted_value(v, secrets)) for k, v in value.items()
        ]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple | set | frozenset):
        cleaned = [_redacted_value(v, secrets) for v in value]
        if all(c is v for c, v in zip(cleaned, value, strict=True)):
            return value
        return type(value)(cleaned) if not isinstance(value, list) else cleaned
    return value


class RedactingFilter(logging.Filter):
    """Redacts a log record's final message (its arguments merged in) before any handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            # A traceback (--debug) would print the exception's text unredacted; handlers
            # use exc_text when it is set.
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Redact every record passing through ``logger``'s handlers (default: the root logger's),
    including records from child loggers and libraries, which a logger filter would miss."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


# Our own records are redacted even when the application configured no handler of its own.
logging.getLogger("sagagraph").addFilter(RedactingFilter())
