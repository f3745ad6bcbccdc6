"""The outputs folder of a saga: checked before the saga starts, absolute, and kept.

A saga records where its files go when it starts, as an absolute path, so a resume, recover
or resolve from another working directory writes and deletes in the same folder. A folder
that cannot hold files (a file, a path under a file, a read-only folder) is refused before
anything is written, instead of failing the first step and paging an operator when its
compensation cannot run either.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from sagagraph.errors import ConfigurationError


def usable_outputs_root(folder: str | Path, *, flag: str = "--outputs") -> Path:
    """``folder`` as an absolute path, once it is known to accept files; creates nothing.

    The folder, or the nearest part of it that exists, must be a folder that this process
    can write into: checked with ``os.access`` and with a real probe file (removed at once),
    since a read-only mount refuses writes that permission bits (and root) would allow.
    ConfigurationError, one line naming the folder and the cause, otherwise.
    """
    root = Path(os.path.abspath(os.fspath(folder)))
    existing = root
    while not existing.exists():
        if existing.is_symlink():
            raise ConfigurationError(f"{flag} {root}: {existing} is a broken symbolic link")
        existing = existing.parent
    if not existing.is_dir():
        where = "is a file" if existing == root else f"is under a file ({existing})"
        raise ConfigurationError(f"{flag} {root}: {where}, not a folder")
    # Both checks: os.access alone trusts permission bits (root passes them all), a probe
    # alone could be fooled by a folder we may create files in but not list; the probe's
    # error also says why (a read-only file system, a full quota).
    cause = _probe(existing)
    if cause is None and not os.access(existing, os.W_OK | os.X_OK):
        cause = "permission denied"
    if cause is not None:
        raise ConfigurationError(f"{flag} {root}: cannot write into {existing} ({cause})")
    return root


def _probe(folder: Path) -> str | None:
    """Why a file cannot be created in ``folder`` (None: it can; the probe is removed)."""
    probe = folder / f".sagagraph-probe-{uuid.uuid4().hex}"
    try:
        probe.write_bytes(b"")
    except OSError as error:
        return error.strerror or str(error)
    probe.unlink()
    return None


def same_outputs_root(recorded: str, given: str | None, saga_id: str) -> str:
    """The outputs folder a saga recorded; ConfigurationError when ``given`` names another.

    ``recorded`` is what the saga stored when it started (absolute since it is recorded that
    way; an older saga's relative path is kept as it was).
    """
    if given is None:
        return recorded
    if os.path.abspath(given) != os.path.abspath(recorded):
        raise ConfigurationError(
            f"--outputs {os.path.abspath(given)}: saga {saga_id!r} writes to {recorded} "
            "(recorded when it started); drop --outputs or give that folder"
        )
    return recorded
