"""One exception hierarchy, rooted at :class:`SagaGraphError`.

Callers catch what they can handle: a bad input file is not a failed step, and neither is a
saga that needs an operator. Every error carries a one-line message that names the file or
field and the cause; the CLI prints exactly that line.
"""

from __future__ import annotations

import errno


class SagaGraphError(Exception):
    """Base class of every error sagagraph raises on purpose."""

    exit_code: int = 1
    """Exit code the CLI uses when this error reaches it."""


class ConfigurationError(SagaGraphError):
    """A setting, flag, URL or saga definition is wrong."""

    exit_code = 2


class ForeignOutputsError(ConfigurationError):
    """A saga's outputs folder exists but this deployment's store did not make it for that
    saga: nothing is written into it or deleted from it."""


class InputError(SagaGraphError):
    """An input (a paper, a saga id) cannot be used; nothing was written."""

    exit_code = 2


class PaperLoadError(InputError):
    """A paper cannot be read: missing, not a PDF, corrupt, encrypted, no text, empty."""


class InvalidSagaIdError(InputError):
    """A saga id is not safe to use as a thread id and a folder name."""


class SagaNotFoundError(InputError):
    """No checkpoint or event exists for this saga id."""


class SagaBusyError(InputError):
    """Another process or thread holds the saga's lease: it is running right now."""


class StepError(SagaGraphError):
    """A step failed after its retries; the saga compensates."""


class StepTimeoutError(StepError):
    """A step did not finish within its timeout."""


class InjectedFailure(StepError):
    """A failure asked for on purpose (``--fail-at STEP``), for demos and tests."""


class ModelCallError(StepError):
    """The chat model could not be reached, refused the request, or answered with an error."""


class MalformedModelOutput(StepError):
    """A chat model replied with something that does not parse into the expected schema."""


class CompensatedKeyError(SagaGraphError):
    """A forward write arrived for an idempotency key that was already compensated."""


class CompensationFailedError(SagaGraphError):
    """A compensation still fails after its retries: the saga needs an operator."""

    exit_code = 4


class BusError(SagaGraphError):
    """The event bus cannot be reached or refused an operation."""


class StorageFullError(SagaGraphError):
    """A disk is full (the checkpointer's or the outputs'): the saga stopped at its last
    checkpoint, with nothing half-written; free space, then ``sagagraph recover`` finishes it."""


_ENOSPC_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_POSTGRES_DISK_FULL = "53100"
"""SQLSTATE ``disk_full``."""


def is_disk_full(error: BaseException) -> bool:
    """True when ``error`` (or what caused it) says a disk or a quota is full: ``ENOSPC`` and
    friends, SQLite's ``SQLITE_FULL``, PostgreSQL's ``disk_full``."""
    seen: BaseException | None = error
    for _ in range(8):  # bounded: exception chains can loop
        if seen is None:
            return False
        if isinstance(seen, OSError) and seen.errno in _ENOSPC_ERRNOS:
            return True
        if getattr(seen, "sqlstate", None) == _POSTGRES_DISK_FULL:
            return True
        if getattr(seen, "sqlite_errorname", None) == "SQLITE_FULL":
            return True
        if type(seen).__name__ == "OperationalError" and "disk is full" in str(seen):
            return True  # SQLite before 3.11's error names; aiosqlite passes the same text
        seen = seen.__cause__ or seen.__context__
    return False


class ToolUndoError(CompensationFailedError):
    """Undoing an agent's tool calls gave up: the message names every call left in effect."""

    def __init__(self, message: str, not_undone: list[str] | None = None) -> None:
        super().__init__(message)
        self.not_undone: list[str] = list(not_undone or [])
        """Idempotency keys of the calls whose undo failed (or that cannot be undone)."""

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.not_undone))


class IrreversibleToolError(ToolUndoError):
    """A tool declared irreversible ran: its effect stays, so the rollback needs an operator."""


class AgentRunError(StepError):
    """An agent run failed; its tool calls were undone (the message says the first failure)."""


class ToolRejectedError(StepError):
    """An operator rejected a tool call that needed approval: the step fails, and the saga
    compensates (the message names the tool and the operator's reason)."""


class LockError(StepError):
    """A step could not take a semantic lock on a shared resource (``ctx.lock``)."""


class LockBusyError(LockError):
    """Another saga holds the resource and the step asked to fail fast."""


class LockTimeoutError(LockError):
    """Another saga held the resource for longer than the step was willing to wait."""


class DeadlockError(LockError):
    """Waiting for the resource would close a cycle of sagas each waiting for the next."""


class CheckpointerLostError(SagaGraphError):
    """The connection to the checkpointer's database broke while a saga ran: the saga stopped
    at its last checkpoint; once the database answers, ``sagagraph recover`` finishes it."""

    exit_code = 75  # try again later (EX_TEMPFAIL), as for a saga another process holds


def is_connection_lost(error: BaseException) -> bool:
    """True when ``error`` (or what caused it) is a database driver's operational error: a
    connection closed, lost or timed out (psycopg's ``OperationalError``)."""
    seen: BaseException | None = error
    for _ in range(8):  # bounded: exception chains can loop
        if seen is None:
            return False
        kind = type(seen)
        if kind.__module__.startswith("psycopg") and any(
            k.__name__ == "OperationalError" for k in kind.__mro__
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
