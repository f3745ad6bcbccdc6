"""Saga ids: validated before they become a thread id, a folder name or a routing key."""

from __future__ import annotations

import re
import uuid

from sagagraph.errors import InvalidSagaIdError

MAX_SAGA_ID_LENGTH = 128
_SAGA_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def validate_saga_id(saga_id: object) -> str:
    """Return ``saga_id`` if it is safe as a path component; raise InvalidSagaIdError if not.

    Allowed: letters, digits, ``_``, ``-`` and ``.``, starting with a letter or digit, at most
    128 characters. This rules out separators, traversal (``..``) and hidden names.
    """
    if not isinstance(saga_id, str) or not saga_id:
        raise InvalidSagaIdError("saga id: must be a non-empty string")
    if len(saga_id) > MAX_SAGA_ID_LENGTH:
        raise InvalidSagaIdError(
            f"saga id {saga_id[:20]!r}...: longer than {MAX_SAGA_ID_LENGTH} characters"
        )
    if not _SAGA_ID.fullmatch(saga_id) or ".." in saga_id:
        raise InvalidSagaIdError(
            f"saga id {saga_id!r}: use letters, digits, '_', '-' and '.', starting with a "
            "letter or digit (no path separators, no '..')"
        )
    return saga_id


def new_saga_id(prefix: str = "saga") -> str:
    """A fresh, unique saga id such as ``saga-1f0c9a2e7b``."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
