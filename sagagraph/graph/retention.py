"""Retention: finished sagas keep their last checkpoint, and old ones go.

A finished saga (``completed``, ``rolled_back``, ``resolved_by_operator``) needs nothing but
its latest checkpoint: its view, events, records and summary are all there, and nothing runs
it again. :func:`prune_sagas` therefore

- deletes every saga that finished before ``finished_before`` (the time of its last
  checkpoint), with the saver's ``delete_thread``;
- with ``keep_last``, cuts every other finished saga down to its latest checkpoint
  (:func:`sagagraph.checkpoints.compaction.keep_latest`, the saver's ``prune`` where it has
  one).

Unfinished sagas, sagas waiting for an operator and sagas whose summary this version cannot
read are never touched. Each saga is pruned under its lease, taken without waiting: a saga a
process is acting on (an operator's rollback, say) is skipped and counted as ``busy``. A
compaction a killed process left half done is finished first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from sagagraph.checkpoints import compaction
from sagagraph.checkpoints.saga_index import SagaSummary, latest_checkpoints
from sagagraph.errors import ConfigurationError, SagaBusyError
from sagagraph.graph.leases import saga_lease
from sagagraph.saga.names import TERMINAL_STATUSES

RETENTION_ENV = "SAGAGRAPH_RETENTION"
"""How long finished sagas are kept (``30d``, ``12h``); unset: the workers prune nothing."""
_PERIOD = re.compile(r"(\d+)([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def retention_period(text: str, name: str = RETENTION_ENV) -> timedelta:
    """A period such as ``30d``, ``12h``, ``90m`` or ``45s``; ConfigurationError naming
    ``name`` (the variable or flag it came from) for anything else."""
    found = _PERIOD.fullmatch(text.strip())
    if not found or int(found.group(1)) == 0:
        raise ConfigurationError(
            f"{name} {text!r}: not a period of at least one unit (30d, 12h, 90m, 45s)"
        )
    return timedelta(**{_UNITS[found.group(2)]: int(found.group(1))})


def configured_period() -> timedelta | None:
    """:data:`RETENTION_ENV`'s period; None when it is unset or empty."""
    text = os.environ.get(RETENTION_ENV, "").strip()
    return retention_period(text) if text else None


@dataclass
class Pruned:
    """What one :func:`prune_sagas` did (or, on a dry run, would do)."""

    deleted: list[str] = field(default_factory=list)
    """Sagas deleted: they finished before the cut-off."""
    compacted: list[str] = field(default_factory=list)
    """Finished sagas cut down to their last checkpoint."""
    checkpoints_removed: int = 0
    """Checkpoints the compactions removed (a dry run counts them too)."""
    busy: list[str] = field(default_factory=list)
    """Sagas skipped because a process held their lease."""
    not_compacted: str | None = None
    """Why finished sagas were not compacted (the saver cannot do it safely); None if they were."""
    resumed: list[str] = field(default_factory=list)
    """Sagas whose compaction a killed process had left half done, finished first."""
    dry_run: bool = False
    log_deleted: list[str] = field(default_factory=list)
    """Choreographed sagas finished before the cut-off whose events left the event log
    (filled by :meth:`sagagraph.service.SagaService.prune`)."""
    log_not_pruned: str | None = None
    """Why the event log was left whole; None when it was pruned or not asked."""

    def counts(self) -> dict[str, Any]:
        """The figures, as the CLI's ``--json`` prints them."""
        return {
            "deleted": len(self.deleted),
            "compacted": len(self.compacted),
            "checkpoints_removed": self.checkpoints_removed,
            "busy": len(self.busy),
            "resumed": len(self.resumed),
            "not_compacted": self.not_compacted,
            "dry_run": self.dry_run,
            "log_deleted": len(self.log_deleted),
        }


def finished_at(summary: SagaSummary) -> datetime | None:
    """When a finished saga finished (its last checkpoint's time); None when unknown."""
    if not summary.ts:
        return None
    try:
        return datetime.fromisoformat(summary.ts)
    except ValueError:
        return None


def prune_sagas(
    saver: BaseCheckpointSaver[Any],
    *,
    finished_before: datetime | None = None,
    keep_last: bool = True,
    dry_run: bool = False,
    only: Collection[str] | None = None,
) -> Pruned:
    """Delete the sagas that finished before ``finished_before``, and cut the other finished
    ones down to their last checkpoint when ``keep_last`` (module docstring). ``only`` limits
    it to those saga ids."""
    done = Pruned(dry_run=dry_run)
    if not dry_run:
        done.resumed = compaction.finish_interrupted(saver)
    finished = [
        s
        for s in latest_checkpoints(saver)
        if s.status in TERMINAL_STATUSES and (only is None or s.saga_id in only)
    ]
    for summary in finished:
        at = finished_at(summary)
        old = finished_before is not None and at is not None and at < finished_before
        if not old and (not keep_last or done.not_compacted):
            continue
        try:
            with saga_lease(saver, summary.saga_id):
                if old:
                    if not dry_run:
                        compaction.delete_saga(saver, summary.saga_id)
                    done.deleted.append(summary.saga_id)
                else:
                    removed = _compact(saver, summary.saga_id, dry_run, done)
                    if removed:
                        done.compacted.append(summary.saga_id)
                        done.checkpoints_removed += removed
        except SagaBusyError:
            done.busy.append(summary.saga_id)
    return done


def _compact(saver: BaseCheckpointSaver[Any], saga_id: str, dry_run: bool, done: Pruned) -> int:
    if dry_run:
        count, namespaces = compaction.checkpoint_count(saver, saga_id)
        return count - namespaces
    try:
        return compaction.keep_latest(saver, saga_id)
    except compaction.NotCompacted as why:
        done.not_compacted = str(why)
        return 0
