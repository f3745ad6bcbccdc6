"""Times on the command line: ``list --since`` and the ISO timestamps events carry."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from sagagraph.errors import InputError

_AGO = re.compile(r"(\d+)([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_time(text: str) -> datetime:
    """An ISO 8601 date or time (``2026-12-05``, ``2026-12-05T06:45:21.994Z``), in UTC when it
    names no zone. ValueError when it is not one."""
    at = datetime.fromisoformat(text.strip())
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def since_flag(text: str, now: datetime, flag: str = "--since") -> datetime:
    """The time ``--since`` (or ``flag``) means: a duration before ``now`` (``90s``, ``30m``,
    ``2h``, ``7d``) or an ISO date or time. InputError, naming the flag, for anything else."""
    ago = _AGO.fullmatch(text.strip())
    if ago:
        return now - timedelta(**{_UNITS[ago.group(2)]: int(ago.group(1))})
    try:
        return parse_time(text)
    except ValueError:
        raise InputError(
            f"{flag} {text!r}: not a duration (30m, 2h, 7d) or an ISO date or time "
            "(2026-12-05, 2026-12-05T06:00)"
        ) from None
