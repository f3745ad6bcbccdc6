"""The application core: every surface (Python, the CLI, the console, the workers) acts on
sagas through :class:`SagaService`'s typed operations, and reads them through its one query API.

What an operator types (a resolve note, a rollback reason, a reject's or a cancel's why, who
asked) goes into the saga's events; the operations redact it first, so a pasted key is never
stored or printed, whichever surface it came through.

A service holds a :class:`~sagagraph.service.store.SagaStore` (checkpointer, event log, work
queue) and the :class:`~sagagraph.service.definitions.Definitions` it may act on. Reading
needs no definition: ``get``, ``list`` and ``events`` show any saga of the stores. Acting on
an orchestrated saga (resume, resolve, rollback, approve, reject, recover) builds the saga's
graph from the definition it belongs to and drives it under the saga's lease, so two
processes never drive one saga at once. Each operation opens the checkpointer for itself and
closes it again: a service holds no connection between calls and sees what others write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, cast

from sagagraph.checkpoints import finished
from sagagraph.checkpoints.saga_index import latest_checkpoints
from sagagraph.errors import InputError, SagaBusyError, SagaGraphError, SagaNotFoundError
from sagagraph.graph import stored as reading
from sagagraph.graph.definitions import Definitions
from sagagraph.redaction import redact
from sagagraph.saga.hooks import SagaHooks, combine_hooks
from sagagraph.saga.names import DEFAULT_ROLLBACK_REASON, TERMINAL_STATUSES, validate_saga_id
from sagagraph.saga.view import QUEUED, Event, describe_error
from sagagraph.service.store import SagaStore

if TYPE_CHECKING:
    from sagagraph.graph.retention import Pruned
    from sagagraph.workers.control import SagaRequest, Schedule, Submitted

CHOREOGRAPHY = "choreography"
Rows = list[dict[str, Any]]
"""Saga rows or views (``SagaService.list`` shadows the builtin in its class)."""
Events = list[Event]
Receipts = list["Submitted"]


@dataclass(frozen=True)
class Recovered:
    """What :meth:`SagaService.recover` did: each saga it took up (its view, or why it was
    skipped or failed: ``recover_skipped``, ``recover_error``), and the sagas it left to an
    operator."""

    views: list[dict[str, Any]] = field(default_factory=list)
    waiting: list[dict[str, Any]] = field(default_factory=list)


def only_compensates(view: Mapping[str, Any], *, compensate: bool = False) -> bool:
    """True when carrying ``view``'s saga on runs no step forward, only compensations: it
    is told to roll back, it is on its way back or waits for an operator's answer to a
    compensation, or it has finished."""
    status = view.get("status")
    return (
        compensate
        or (bool(view.get("waiting_for_operator")) and not view.get("approvals"))
        or status in TERMINAL_STATUSES
        or status in ("compensating", "compensation_failed")
    )


@dataclass
class SagaService:
    """Typed operations on the sagas of one store (module docstring)."""

    store: SagaStore
    definitions: Definitions = field(default_factory=Definitions)
    hooks: SagaHooks | None = None
    """Observe every run this service drives (alerts, say), beside each call's own hooks."""

    @classmethod
    def from_urls(
        cls,
        db: str | None = None,
        bus: str | None = None,
        queue: str | None = None,
        *,
        definitions: Definitions | None = None,
        hooks: SagaHooks | None = None,
    ) -> SagaService:
        """A service on the stores the URLs name (else the environment's)."""
        return cls(SagaStore.from_env(db, bus, queue), definitions or Definitions(), hooks)

    # -- reading -------------------------------------------------------------------------

    def get(self, saga_id: str, *, choreographed: bool = True) -> dict[str, Any] | None:
        """``saga_id``'s view (orchestrated, blackboard or, unless ``choreographed`` is
        False, choreographed) with its ``input``, ``dead_lettered`` and ``orphaned``; None
        when no store asked knows it. A finished saga is read from the fields its saver kept
        when it ended, with the database driver alone (:mod:`sagagraph.checkpoints.finished`:
        no LangGraph loaded); any other saga through the saver."""
        try:
            validate_saga_id(saga_id)
        except InputError:
            return None
        if self.store.has_checkpoints():
            kept = finished.read_finished(self.store.db, saga_id)
            if kept is not None and kept.fields is not None:
                view = reading.view_of_finished(kept.fields, saga_id, kept.locks)
                if view is not None:
                    return view
            if kept is None or kept.fields is not None:  # not known absent: read in full
                with self.store.checkpointer() as saver:
                    view = reading.read_view(saver, saga_id)
                    if view is not None:
                        return reading.with_flags(saver, view)
        return self.choreographed(saga_id) if choreographed else None

    def require(self, saga_id: str) -> dict[str, Any]:
        """:meth:`get`, or SagaNotFoundError naming both stores."""
        validate_saga_id(saga_id)
        view = self.get(saga_id)
        if view is None:
            raise SagaNotFoundError(self.store.not_found(saga_id))
        return view

    def choreographed(self, saga_id: str) -> dict[str, Any] | None:
        """A choreographed saga's view from the event log; None when the log has none (or
        this store does not read one, see :meth:`SagaStore.reads_event_log`)."""
        if not self.store.reads_event_log():
            return None
        try:
            from sagagraph.choreography.runner import choreography_status

            view: dict[str, Any] = choreography_status(self.store.bus, saga_id)
        except (SagaGraphError, ImportError):
            return None
        view.setdefault("dead_lettered", False)
        view.setdefault("orphaned", False)
        return view

    def list(
        self,
        *,
        status: str | None = None,
        mode: str | None = None,
        definition: str | None = None,
        since: datetime | None = None,
        text: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        warn: Callable[[str], None] | None = None,
    ) -> Rows:
        """Rows of the sagas of both stores, newest first: finished sagas from the stamped
        index, the others from their latest checkpoint. ``status`` is a stored status or
        ``orphaned``, ``dead_lettered``, ``operator``; ``text`` matches the id and the
        input; ``warn`` hears why the event log could not be read."""
        rows = [*self.orchestrated_rows(), *self.choreographed_rows(warn)]
        kept = [
            r
            for r in reading.newest_first(rows)
            if reading.has_status(r, status)
            and (mode is None or r["mode"] == mode)
            and (definition is None or r["definition"] == definition)
            and reading.has_text(r, text)
            and (since is None or ((at := reading.updated_at(r)) is not None and at >= since))
        ]
        return kept[offset : None if limit is None else offset + limit]

    def orchestrated_rows(self) -> Rows:
        """A row per orchestrated saga: when every saga of the store has finished, from the
        stamped index alone, read with the database driver (no LangGraph); else through the
        saver (:func:`~sagagraph.graph.stored.orchestrated_rows`)."""
        if not self.store.has_checkpoints():
            return []
        summaries = finished.read_summaries(self.store.db)
        if summaries is not None and all(
            s.stamped and s.status in TERMINAL_STATUSES for s in summaries
        ):
            return [reading.row_of_summary(s) for s in summaries]
        with self.store.checkpointer() as saver:
            return list(reading.orchestrated_rows(saver))

    def choreographed_rows(self, warn: Callable[[str], None] | None = None) -> Rows:
        """Rows of the sagas on the event log (one read, folded per saga)."""
        if not self.store.reads_event_log():
            return []
        try:
            from sagagraph.choreography.runner import choreographed_sagas

            views = choreographed_sagas(self.store.bus)
        except (SagaGraphError, OSError, ImportError) as error:
            if warn is not None:
                warn(f"event log not read: {describe_error(error)}")
            return []
        return [reading.row_of_view(v) for v in views]

    def views(self) -> Rows:
        """The full view (with its input) of every orchestrated saga, in saga id order."""
        if not self.store.has_checkpoints():
            return []
        with self.store.checkpointer() as saver:
            found = (reading.read_view(saver, s.saga_id) for s in latest_checkpoints(saver))
            return [v for v in found if v is not None]

    def events(self, saga_id: str) -> Events:
        """The audit trail of ``saga_id``: its recorded events; SagaNotFoundError."""
        return [*(self.require(saga_id).get("events") or [])]

    def exists(self, saga_id: str, *, mode: str | None = None) -> bool:
        """True when a store holds ``saga_id`` (of ``mode``: orchestrated or choreography)."""
        view = self.get(saga_id, choreographed=mode in (None, CHOREOGRAPHY))
        if view is None:
            return False
        return mode is None or (view.get("mode") == CHOREOGRAPHY) == (mode == CHOREOGRAPHY)

    # -- acting --------------------------------------------------------------------------

    def told(self, hooks: SagaHooks | None) -> SagaHooks | None:
        """The hooks of one call together with the service's."""
        found = [h for h in (self.hooks, hooks) if h is not None]
        return combine_hooks(*found) if found else None

    def orchestrated(self, saga_id: str, command: str) -> dict[str, Any]:
        """The view of an orchestrated saga to act on; SagaNotFoundError otherwise, saying
        when it is a choreographed one."""
        view = self.require(saga_id)
        if view.get("mode") == CHOREOGRAPHY:
            raise SagaNotFoundError(
                f"saga {saga_id!r} is choreographed: its agents carry it on by themselves "
                f"(sagagraph status {saga_id}, sagagraph events {saga_id}); "
                f"{command} applies to orchestrated sagas"
            )
        return view

    @contextmanager
    def app(self, view: Mapping[str, Any], command: str, *, forward: bool) -> Iterator[Any]:
        """``view``'s saga graph compiled on the checkpointer, for ``command``; ``forward``:
        steps may run forward, so the definition may refuse first (a missing model key)."""
        graph = self.definitions.graph_for(view, command)
        if forward:
            self.definitions.check_forward(view, command)
        with self.store.checkpointer() as saver:
            yield graph.compile(checkpointer=saver)

    def run(
        self,
        reference: str,
        saga_input: Mapping[str, Any],
        *,
        saga_id: str | None = None,
        fail_at: str | None = None,
        hooks: SagaHooks | None = None,
    ) -> dict[str, Any]:
        """Start a saga of the definition ``reference`` names and run it until it ends or
        waits for an operator; its view. InputError when ``saga_id`` exists already."""
        if saga_id is not None and self.exists(saga_id, mode="orchestration"):
            raise InputError(f"saga {saga_id!r}: already exists; use: sagagraph resume {saga_id}")
        from sagagraph.graph.runner import run_saga

        view = {"saga_id": saga_id or "", "input": dict(saga_input)}
        graph = self.definitions.graph_of(reference, saga_input)
        self.definitions.check_forward(view, "run", reference)
        with self.store.checkpointer() as saver:
            app = graph.compile(checkpointer=saver)
            return run_saga(
                app, saga_input, saga_id=saga_id, fail_at=fail_at, hooks=self.told(hooks)
            )

    def resume(self, saga_id: str, *, hooks: SagaHooks | None = None) -> dict[str, Any]:
        """Continue an unfinished saga from its last checkpoint."""
        from sagagraph.graph.runner import resume_saga

        view = self.orchestrated(saga_id, "resume")
        with self.app(view, "resume", forward=not only_compensates(view)) as app:
            return resume_saga(app, saga_id, hooks=self.told(hooks))

    def resolve(
        self, saga_id: str, action: str, *, note: str = "", hooks: SagaHooks | None = None
    ) -> dict[str, Any]:
        """Answer a compensation that gave up: ``retry`` it, or ``skip`` it (``note`` says
        who decided and why)."""
        from sagagraph.graph.runner import resolve_saga

        view = self.orchestrated(saga_id, "resolve")
        with self.app(view, "resolve", forward=False) as app:
            return resolve_saga(
                app,
                saga_id,
                cast(Literal["retry", "skip"], action),
                note=redact(note),
                hooks=self.told(hooks),
            )

    def rollback(
        self,
        saga_id: str,
        *,
        reason: str = DEFAULT_ROLLBACK_REASON,
        by: str | None = None,
        hooks: SagaHooks | None = None,
    ) -> dict[str, Any]:
        """Compensate one unfinished saga (who asked, and why, go into its events). A saga
        still queued on the work queue is refused: ``cancel`` takes it off the queue."""
        from sagagraph.graph.recover import rollback_saga

        view = self.orchestrated(saga_id, "rollback")
        if view["status"] == QUEUED and not view.get("dead_letter"):
            raise InputError(
                f"saga {saga_id!r}: queued on the work queue and not started; "
                f"take it off the queue with `sagagraph cancel {saga_id}`"
            )
        with self.app(view, "rollback", forward=False) as app:
            return rollback_saga(
                app,
                saga_id,
                reason=redact(reason),
                by=None if by is None else redact(by),
                hooks=self.told(hooks),
            )

    def approve(
        self,
        saga_id: str,
        *,
        call: str | None = None,
        edit: Mapping[str, Any] | None = None,
        hooks: SagaHooks | None = None,
    ) -> dict[str, Any]:
        """Approve the saga's waiting tool calls (or the one ``call`` names); it carries on."""
        from sagagraph.graph.recover import approve_tool_call

        view = self.orchestrated(saga_id, "approve")
        with self.app(view, "approve", forward=True) as app:
            return approve_tool_call(
                app, saga_id, call=call, edit=dict(edit) if edit else None, hooks=self.told(hooks)
            )

    def reject(
        self, saga_id: str, why: str, *, call: str | None = None, hooks: SagaHooks | None = None
    ) -> dict[str, Any]:
        """Reject the saga's waiting tool calls (or the one ``call`` names): its step fails
        and the saga compensates."""
        from sagagraph.graph.recover import reject_tool_call

        view = self.orchestrated(saga_id, "reject")
        with self.app(view, "reject", forward=False) as app:
            return reject_tool_call(app, saga_id, redact(why), call=call, hooks=self.told(hooks))

    def prune(
        self,
        *,
        finished_before: datetime | None = None,
        keep_last: bool = True,
        dry_run: bool = False,
    ) -> Pruned:
        """Retention: delete the sagas that finished before ``finished_before`` (orchestrated
        ones from the checkpointer, choreographed ones from the event log this store reads);
        with ``keep_last``, cut the other finished sagas down to their last checkpoint (their
        view and events stay). Unfinished sagas are never touched
        (:mod:`sagagraph.graph.retention`, :mod:`sagagraph.choreography.retention`, loaded
        only by this operation)."""
        from sagagraph.graph.retention import Pruned, prune_sagas

        done = Pruned(dry_run=dry_run)
        if self.store.has_checkpoints():
            with self.store.checkpointer() as saver:
                done = prune_sagas(
                    saver, finished_before=finished_before, keep_last=keep_last, dry_run=dry_run
                )
        if finished_before is not None and self.store.reads_event_log():
            from sagagraph.choreography.retention import prune_event_log

            log = prune_event_log(self.store.bus, finished_before, dry_run=dry_run)
            done.log_deleted, done.log_not_pruned = log.deleted, log.not_pruned
        return done

    def unfinished(self, *, compensate: bool = False) -> tuple[Rows, Rows]:
        """The orchestrated sagas ``recover`` takes up, and those waiting for an operator.

        A saga the work queue dead-lettered waits for an operator too (``requeue``,
        ``cancel`` or ``rollback``): it took its workers down, so recovering it forward in
        this process would only repeat that; rolling it back (``compensate``) runs no step.
        """
        from sagagraph.graph.recover import is_unfinished

        if not self.store.has_checkpoints():
            return [], []
        pending, waiting = [], []
        with self.store.checkpointer() as saver:
            for summary in latest_checkpoints(saver, skip=TERMINAL_STATUSES):
                view = reading.read_view(saver, summary.saga_id)
                if view is None:
                    continue
                if view["waiting_for_operator"] or (view.get("dead_letter") and not compensate):
                    waiting.append(view)
                elif is_unfinished(view):
                    pending.append(view)
        return pending, waiting

    def recover(
        self,
        *,
        compensate: bool = False,
        hooks: SagaHooks | None = None,
        on_saga: Callable[[dict[str, Any]], None] | None = None,
    ) -> Recovered:
        """Carry every unfinished orchestrated saga on (forward, or back with
        ``compensate``). A saga a live process holds, or one this process cannot build, is
        skipped (``recover_skipped``); one whose recovery fails does not stop the others
        (``recover_error``). ``on_saga`` hears each saga as it is taken up."""
        from sagagraph.graph.recover import recover_saga

        pending, waiting = self.unfinished(compensate=compensate)
        done = Recovered(waiting=waiting)
        for view in pending:
            saga_id = view["saga_id"]
            try:
                forward = not only_compensates(view, compensate=compensate)
                graph = self.definitions.graph_for(view, "recover")
            except InputError as foreign:
                done.views.append({"saga_id": saga_id, "recover_skipped": str(foreign)})
                continue
            except SagaGraphError as error:  # its settings do not fit this process's flags
                done.views.append({"saga_id": saga_id, "recover_error": describe_error(error)})
                continue
            try:
                if forward:
                    self.definitions.check_forward(view, "recover")
                if on_saga is not None:
                    on_saga(view)
                with self.store.checkpointer() as saver:
                    app = graph.compile(checkpointer=saver)
                    final = recover_saga(
                        app, saga_id, compensate=compensate, hooks=self.told(hooks)
                    )
            except SagaBusyError as busy:
                done.views.append({"saga_id": saga_id, "recover_skipped": str(busy)})
                continue
            except SagaGraphError as error:
                done.views.append({"saga_id": saga_id, "recover_error": describe_error(error)})
                continue
            done.views.append(final)
        return done

    # -- the work queue ------------------------------------------------------------------

    def submit(
        self,
        reference: str,
        requests: Sequence[SagaRequest],
        *,
        queue: str | None = None,
        schedule: Schedule | None = None,
    ) -> Receipts:
        """Record sagas of ``reference``'s definition ``queued`` and put one task each on
        the work queue (``queue``: the name or URL, default the store's)."""
        from sagagraph.workers.control import submit_sagas

        return submit_sagas(
            requests,
            app=reference,
            queue=queue or self.store.queue,
            db=self.store.db,
            schedule=schedule,
            definitions=self.definitions,
        )

    def cancel(
        self, saga_id: str, *, by: str, why: str, queue: str | None = None
    ) -> dict[str, Any]:
        """Take a queued saga off the work queue (compensated now), or tell its worker to
        compensate a running one at its next step."""
        from sagagraph.workers.control import cancel_saga

        return cancel_saga(
            saga_id,
            by=redact(by),
            why=redact(why),
            queue=queue or self.store.queue,
            db=self.store.db,
            definitions=self.definitions,
        )

    def requeue(
        self,
        saga_id: str,
        *,
        note: str = "",
        queue: str | None = None,
        schedule: Schedule | None = None,
    ) -> dict[str, Any]:
        """Put a dead-lettered saga back on the work queue with a fresh delivery count."""
        from sagagraph.workers.control import requeue_saga

        return requeue_saga(
            saga_id,
            queue=queue or self.store.queue,
            db=self.store.db,
            schedule=schedule,
            note=redact(note),
            definitions=self.definitions,
        )
