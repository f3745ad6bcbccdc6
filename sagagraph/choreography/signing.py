"""Authenticated events: an HMAC-SHA256 over each event's canonical body with the deployment key.

With a deployment key (``SAGAGRAPH_BUS_KEY``, or a file named by ``SAGAGRAPH_BUS_KEY_FILE`` or
``--bus-key-file``), every event published carries ``sig``: the hex HMAC-SHA256, under that
key, of a domain tag, the log's scope (a SQLite log's own id, a RabbitMQ namespace) and the
event's canonical body (its JSON without ``sig``, keys sorted, no spaces, ASCII). Every reader
checks it: step services refuse (and record) an unsigned or badly signed event, and a saga is
judged and shown by signed events only; the scope makes a copy into another log refused.

The key proves that the sender holds it, not which participant it is: the saga's own history
decides who may say what (:mod:`.admission`); separating participants would need asymmetric
signatures (docs/choreography.md). Without a key, events are neither signed nor checked: fit
for one user on one machine; the CLI refuses RabbitMQ so unless told ``--insecure-bus``. The
key is registered with :mod:`sagagraph.redaction`, and its ``repr`` names only its source.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sagagraph.choreography.messages import SagaMessage
from sagagraph.errors import ConfigurationError
from sagagraph.redaction import register_secret

KEY_ENV = "SAGAGRAPH_BUS_KEY"
KEY_FILE_ENV = "SAGAGRAPH_BUS_KEY_FILE"
SIGNATURE_FIELD = "sig"
MIN_KEY_LENGTH = 16
"""Shorter keys are refused: an HMAC is only as strong as a key nobody can guess."""
_DOMAIN = b"sagagraph-bus-event-v1\n"
"""Prefixed to every signed body: a MAC made here is never valid for another use of the key."""

UNSIGNED = "unsigned event: this bus requires events signed with the deployment key"
BAD_SIGNATURE = "bad signature: not signed with this deployment's key, or altered since"


class BusKey:
    """The deployment key; its ``repr`` and ``str`` name only where it came from."""

    __slots__ = ("_secret", "source")

    def __init__(self, secret: bytes, source: str) -> None:
        if len(secret) < MIN_KEY_LENGTH:
            raise ConfigurationError(
                f"bus key from {source}: at least {MIN_KEY_LENGTH} characters, got {len(secret)}"
            )
        self._secret = secret
        self.source = source
        register_secret(secret.decode(errors="replace"))

    def mac(self, body: bytes) -> str:
        return hmac.new(self._secret, _DOMAIN + body, hashlib.sha256).hexdigest()

    def __repr__(self) -> str:
        return f"BusKey(from {self.source})"

    __str__ = __repr__


def canonical_body(message: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: the event without ``sig``, as canonical JSON."""
    unsigned = {k: v for k, v in message.items() if k != SIGNATURE_FIELD}
    return json.dumps(unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


class Authenticator:
    """Signs and checks events with the deployment key; without one, does neither.

    ``scope`` names the log the events belong to (a SQLite log's id, a RabbitMQ namespace):
    it is signed with every event, so an event copied verbatim into another log (another
    namespace or deployment that shares the key) is refused there as badly signed, instead
    of starting the same saga a second time with the first deployment's settings.
    """

    def __init__(self, key: BusKey | None, scope: str = "") -> None:
        self.key = key
        self.scope = scope

    @property
    def signs(self) -> bool:
        return self.key is not None

    def bound_to(self, scope: str) -> Authenticator:
        """This key, signing and checking events of the log ``scope`` names."""
        return Authenticator(self.key, scope)

    def _mac(self, message: Mapping[str, Any]) -> str:
        assert self.key is not None
        body = canonical_body(message)
        if self.scope:
            body = b"log:" + self.scope.encode() + b"\n" + body
        return self.key.mac(body)

    def seal(self, message: SagaMessage) -> SagaMessage:
        """``message`` with its signature (unchanged without a key). Deterministic: sealing a
        re-emitted event again gives the same ``sig``."""
        if self.key is None:
            return message
        sealed: SagaMessage = {**message, "sig": self._mac(message)}
        return sealed

    def check(self, message: Mapping[str, Any]) -> str | None:
        """Why ``message`` is not authentic (None: it is, or there is no key to check with)."""
        if self.key is None:
            return None
        signature = message.get(SIGNATURE_FIELD)
        if not isinstance(signature, str) or not signature:
            return UNSIGNED
        if not hmac.compare_digest(signature, self._mac(message)):
            return BAD_SIGNATURE
        return None

    def __repr__(self) -> str:
        return f"Authenticator({self.key!r}, scope={self.scope!r})"


def read_key_file(path: str | Path, source: str) -> BusKey:
    """The key in a file (its first line, surrounding whitespace stripped)."""
    try:
        text = Path(path).read_bytes()
    except OSError as error:
        raise ConfigurationError(
            f"bus key file {path}: cannot read it ({error.strerror or error})"
        ) from None
    lines = text.strip().splitlines()
    return BusKey(lines[0].strip() if lines else b"", source)


def load_bus_key(
    key_file: str | Path | None = None, env: Mapping[str, str] | None = None
) -> BusKey | None:
    """The deployment key: ``key_file``, else ``SAGAGRAPH_BUS_KEY``, else the file named by
    ``SAGAGRAPH_BUS_KEY_FILE``; None when none is set. ConfigurationError when both variables
    are set (which one is meant?), the file is unreadable, or the key is too short."""
    env = os.environ if env is None else env
    if key_file is not None:
        return read_key_file(key_file, f"--bus-key-file {key_file}")
    value, file = env.get(KEY_ENV), env.get(KEY_FILE_ENV)
    if value and file:
        raise ConfigurationError(f"set {KEY_ENV} or {KEY_FILE_ENV}, not both")
    if value:
        return BusKey(value.encode(), f"${KEY_ENV}")
    if file:
        return read_key_file(file, f"${KEY_FILE_ENV} ({file})")
    return None


FROM_ENVIRONMENT = "environment"
"""Passed as ``key`` to :func:`~sagagraph.choreography.buses.open_bus`: read the key with
:func:`load_bus_key` (the default)."""


def authenticator_for(key: BusKey | str | None) -> Authenticator:
    """The authenticator for ``key`` (``FROM_ENVIRONMENT``: the environment's key, if any)."""
    if isinstance(key, str):
        if key != FROM_ENVIRONMENT:
            raise ConfigurationError("bus key: pass a BusKey, None, or FROM_ENVIRONMENT")
        return Authenticator(load_bus_key())
    return Authenticator(key)
