"""The paper agents' output store: text files under ``<root>/<saga_id>/``, written atomically,
and the outputs folder they go in.

Every write is keyed by the step's idempotency key (``saga_id:step``): running a step again
rewrites the same file, and compensating the key deletes what it wrote. The store remembers
compensated keys in a small SQLite ledger (``<root>/.sagagraph/ledger.sqlite``, WAL mode, safe
for many threads and processes), so a forward write that lands after its compensation (a model
call that timed out, then returned) is refused, or undone at once if it raced past the check.

The outputs folder is checked before the saga starts (:func:`usable_outputs_root`) and kept
as an absolute path, so a resume, recover or resolve from another working directory writes
and deletes in the same folder. A folder that cannot hold files (a file, a path under a file,
a read-only folder) is refused before anything is written, instead of failing the first step
and paging an operator when its compensation cannot run either.

A store touches only saga folders it made itself (:meth:`OutputStore.claim`): the ledger
records each saga folder this store creates (table ``folders``), and a write or a compensation
that meets a folder of that name made by someone else (another deployment's folder copied or
linked in, a hand-made one) refuses with :class:`~sagagraph.errors.ForeignOutputsError` and
deletes nothing. The record is kept in the ledger rather than in the saga folder, so the folder
holds only the saga's own files.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from sagagraph.checkpoints.urls import enable_wal
from sagagraph.errors import (
    CompensatedKeyError,
    ConfigurationError,
    ForeignOutputsError,
    StorageFullError,
    is_disk_full,
)
from sagagraph.redaction import redact
from sagagraph.saga.names import validate_saga_id
from sagagraph.storable_text import replace_surrogates

LEDGER_DIR = ".sagagraph"
"""Hidden folder under the root that holds the ledger; never a valid saga id."""
LEDGER_FILE = "ledger.sqlite"

_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_STEP = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS writes (
    key TEXT NOT NULL, path TEXT NOT NULL, PRIMARY KEY (key, path)
);
CREATE TABLE IF NOT EXISTS tombstones (
    key TEXT PRIMARY KEY, compensated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE IF NOT EXISTS folders (
    saga_id TEXT PRIMARY KEY, claimed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
"""


def split_key(key: str) -> tuple[str, str]:
    """``saga_id:step`` -> (saga_id, step); ConfigurationError when the key is malformed."""
    saga_id, sep, step = key.rpartition(":")
    if not sep or not _STEP.match(step):
        raise ConfigurationError(f"idempotency key {key!r}: expected 'saga_id:step'")
    return validate_saga_id(saga_id), step


class OutputStore:
    """Atomic text files under ``<root>/<saga_id>/``, with a ledger of compensated keys.

    The root is kept as given (a relative root gives relative paths such as
    ``outputs/<saga_id>/review.txt``); the ledger records paths relative to the root.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        """Folder that holds one subfolder per saga."""
        self._ready = False

    def __repr__(self) -> str:
        return f"OutputStore({str(self.root)!r})"

    def recorded_settings(self) -> dict[str, str]:
        """What a saga records of this store when it starts: its folder, absolute (resolved
        against the working folder now), so a resume or recover from anywhere writes there."""
        return {"outputs": os.path.abspath(self.root)}

    @property
    def ledger_path(self) -> Path:
        return self.root / LEDGER_DIR / LEDGER_FILE

    def saga_dir(self, saga_id: str) -> Path:
        """The folder that holds ``saga_id``'s files (it may not exist)."""
        return self.root / validate_saga_id(saga_id)

    def path_for(self, key: str, name: str) -> Path:
        """Where the file ``name`` written under ``key`` lives."""
        if not _FILE_NAME.match(name):
            raise ConfigurationError(f"output file name {name!r}: use a plain file name")
        saga_id, _ = split_key(key)
        return self.saga_dir(saga_id) / name

    # -- ledger ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _ledger(self) -> Iterator[sqlite3.Connection]:
        """A short-lived connection: one per call keeps threads and processes independent.

        A ledger that cannot be opened (a read-only folder) is a ConfigurationError naming the
        outputs folder and the cause, not SQLite's "unable to open database file".
        """
        try:
            if not self._ready:
                self.ledger_path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.ledger_path), timeout=30, isolation_level=None)
        except (OSError, sqlite3.Error) as error:
            raise self._unusable(error) from None
        try:
            if not self._ready:
                try:
                    enable_wal(conn)  # waits while another writer holds a new ledger
                    conn.executescript(_SCHEMA)
                except sqlite3.Error as error:
                    raise self._unusable(error) from None
                self._ready = True
            yield conn
        finally:
            conn.close()

    def _unusable(self, error: OSError | sqlite3.Error) -> Exception:
        """Why the ledger cannot be opened, naming the outputs folder: a full disk stays what
        it is (the caller reports it); else the folder's own cause (read-only, permission)."""
        if is_disk_full(error):
            return error
        folder = self.ledger_path.parent
        cause = _probe(folder) if folder.is_dir() else None
        cause = cause or (error.strerror if isinstance(error, OSError) else None) or str(error)
        return ConfigurationError(
            f"outputs folder {self.root}: cannot open its ledger {self.ledger_path} ({cause})"
        )

    def is_compensated(self, key: str) -> bool:
        """True once ``key`` was compensated; a compensated key never writes again."""
        split_key(key)
        if not self.ledger_path.exists():
            return False
        with self._ledger() as conn:
            row = conn.execute("SELECT 1 FROM tombstones WHERE key = ?", (key,)).fetchone()
        return row is not None

    def written(self, key: str) -> list[Path]:
        """Files ``key`` wrote (or began to write), whether or not they still exist."""
        split_key(key)
        if not self.ledger_path.exists():
            return []
        try:
            with self._ledger() as conn:
                rows = conn.execute(
                    "SELECT path FROM writes WHERE key = ? ORDER BY path", (key,)
                ).fetchall()
        except sqlite3.OperationalError as error:
            if not is_disk_full(error):
                raise
            # Only setting the ledger up writes here; it failed, so the ledger was never set
            # up, and no write recorded anything in it.
            return []
        return [self.root / row[0] for row in rows]

    # -- which saga folders are this store's ------------------------------------------------

    def claim(self, saga_id: str, own_names: Iterable[str] = ()) -> None:
        """Make sure ``<root>/<saga_id>/`` is this store's to write into and delete from.

        A folder this store recorded as its own, or one that does not exist yet (or is empty:
        nothing in it to harm), is recorded as this store's and passes. A folder that exists
        with files but no record is either an older saga's (made before folders were
        recorded) or someone else's: it is adopted only when every file in it (a write's
        leftover temporary files aside) is one this store's ledger says a step of this saga
        wrote, or one of ``own_names`` (the files the compensating step always writes, which
        an older version wrote without a ledger record). Then nothing in it is anyone else's
        but that step's own file, and older sagas keep resuming and compensating as before.
        Otherwise ForeignOutputsError, one line naming the folder and why; nothing is written
        or deleted.
        """
        folder = self.saga_dir(saga_id)
        with self._ledger() as conn:
            row = conn.execute("SELECT 1 FROM folders WHERE saga_id = ?", (saga_id,)).fetchone()
            if row is not None:
                return
            foreign = self._foreign_files(conn, saga_id, folder, set(own_names))
            if foreign:
                raise ForeignOutputsError(
                    f"outputs folder {folder}: not made by this store for saga {saga_id!r} "
                    f"(it holds {foreign[0]!r}, which no step of that saga wrote here); "
                    "refusing to write or delete in it"
                )
            conn.execute("INSERT OR IGNORE INTO folders (saga_id) VALUES (?)", (saga_id,))

    def _foreign_files(
        self, conn: sqlite3.Connection, saga_id: str, folder: Path, own: set[str]
    ) -> list[str]:
        """Names in ``folder`` that are neither ``own`` nor recorded by a write of ``saga_id``
        (their temporary files count as theirs); none when there is no such folder."""
        if folder.is_symlink():
            return [f"{folder.name} -> {os.readlink(folder)}"]
        if not folder.exists():
            return []
        if not folder.is_dir():
            return [folder.name]
        prefix = f"{saga_id}/"
        recorded = own | {
            row[0][len(prefix) :]
            for row in conn.execute(
                "SELECT path FROM writes WHERE substr(path, 1, ?) = ?", (len(prefix), prefix)
            )
        }
        return [
            p.name
            for p in sorted(folder.iterdir())
            if p.name not in recorded and not any(p.name.startswith(f".{r}.") for r in recorded)
        ]

    # -- forward and compensating writes -----------------------------------------------------

    def write(self, key: str, name: str, text: str) -> Path:
        """Write ``text`` to ``<root>/<saga_id>/<name>`` atomically and return the path.

        Writing the same key again replaces the file (a re-run after a crash). Raises
        CompensatedKeyError, leaving nothing behind, when ``key`` was already compensated,
        including when the compensation happened while this write was in flight. Every known
        secret in ``text`` is hidden first: a model may quote the key in its answer.
        """
        target = self.path_for(key, name)
        try:
            return self._write(key, target, redact(text))
        except (OSError, sqlite3.Error) as error:
            if not is_disk_full(error):
                raise
            # Nothing is half-written (temporary files are removed); say which disk is full.
            raise StorageFullError(
                f"outputs folder {self.root}: the disk is full ({type(error).__name__}: {error})"
            ) from None

    def _write(self, key: str, target: Path, text: str) -> Path:
        name = target.name
        if self.is_compensated(key):
            raise CompensatedKeyError(f"{key}: already compensated; refusing to write {name}")
        self.claim(split_key(key)[0])
        # Record the intent before the file exists, so a compensation that runs from here on
        # knows which file to delete.
        with self._ledger() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO writes (key, path) VALUES (?, ?)",
                (key, target.relative_to(self.root).as_posix()),
            )
        for leftover in target.parent.glob(f".{target.name}.*.tmp"):
            self._delete(leftover)  # a write of this key that died before its rename
        self._atomic_write(target, text)
        if self.is_compensated(key):
            # Compensated between the first check and the rename: undo the write ourselves.
            self._delete(target)
            self._remove_if_empty(target.parent)
            raise CompensatedKeyError(f"{key}: compensated while writing {name}; write undone")
        return target

    def compensate(self, key: str, names: Iterable[str] = ()) -> list[Path]:
        """Undo ``key``: remember it as compensated, delete what it wrote; idempotent.

        ``names`` are file names the step always writes, deleted even when the ledger has no
        record of them. Succeeds when there is nothing to undo. Returns the files deleted.
        The saga's folder is removed when this leaves it empty.
        """
        saga_id, _ = split_key(key)
        # Another's folder is never touched, not even to undo a step that may have written
        # there: ForeignOutputsError before anything is marked or deleted. With no folder
        # there is nothing to harm and nothing to claim, and no ledger write is needed (a
        # full disk still undoes a step that wrote nothing).
        names = tuple(names)
        folder = self.saga_dir(saga_id)
        if folder.exists() or folder.is_symlink():
            self.claim(saga_id, own_names=names)
        # The tombstone first, so a write in flight sees it and undoes itself. On a full disk
        # it may not fit yet: deleting this key's files frees space, then it is tried again.
        marked = self._tombstone(key)
        written = self.written(key)
        targets = {*written, *(self.path_for(key, n) for n in names)}
        deleted = [t for t in sorted(targets) if self._delete(t)]
        for target in targets:
            # Temporary files of a write that died before its rename.
            for leftover in target.parent.glob(f".{target.name}.*.tmp"):
                self._delete(leftover)
        self._remove_if_empty(self.saga_dir(saga_id))
        if not marked and not self._tombstone(key) and (written or deleted):
            # Its files are gone, but nothing would refuse a late write of this key yet.
            raise StorageFullError(
                f"{self.ledger_path}: disk full; {key} is undone but cannot be marked "
                "compensated yet (free space, then retry)"
            )
        # A key that wrote nothing needs no space to undo. A late write of it must record its
        # intent in the ledger first, which fails too while the disk is full.
        return deleted

    def _tombstone(self, key: str) -> bool:
        """Remember ``key`` as compensated; False when the disk is too full to record it."""
        try:
            with self._ledger() as conn:
                conn.execute("INSERT OR IGNORE INTO tombstones (key) VALUES (?)", (key,))
        except (OSError, sqlite3.Error) as error:
            if not is_disk_full(error):
                raise
            return False
        return True

    def _atomic_write(self, target: Path, text: str) -> None:
        # Outputs are UTF-8 text: a character that has none (a paper named in Latin-1, say)
        # shows as U+FFFD instead of failing the step that names it.
        data = replace_surrogates(text).encode("utf-8")
        for _ in range(3):
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
            try:
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileNotFoundError:
                continue  # a compensation removed the empty folder just now; make it again
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(temp, target)
            except BaseException:
                temp.unlink(missing_ok=True)
                raise
            return
        raise OSError(f"{target.parent}: folder keeps disappearing while writing {target.name}")

    @staticmethod
    def _delete(path: Path) -> bool:
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    @staticmethod
    def _remove_if_empty(folder: Path) -> None:
        with contextlib.suppress(OSError):
            folder.rmdir()  # fails (and is ignored) while the folder still holds files


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


def same_outputs_root(recorded: str, given: str | None) -> str:
    """The outputs folder a saga recorded; ConfigurationError when ``given`` names another.

    ``recorded`` is what the saga stored when it started (absolute since it is recorded that
    way; an older saga's relative path is kept as it was).
    """
    if given is None:
        return recorded
    if os.path.abspath(given) != os.path.abspath(recorded):
        raise ConfigurationError(
            f"--outputs {os.path.abspath(given)}: the saga writes to {recorded} "
            "(recorded when it started); drop --outputs or give that folder"
        )
    return recorded
