"""What a stored job of ours is: a call by name with plain data, never a live object.

apscheduler pickles the function a job calls by its name, so every job the scheduler stores
calls :data:`FIRE` with ``(scheduler name, kind, job id, payload)``, and :func:`fire` (what that
name resolves to) hands the run to the started scheduler of that name (:data:`live`). Jobs
stored before the scheduler moved to ``bot.scheduling`` call :data:`OLD_FIRE`; both count as
ours (:data:`OURS`), so old stores load and fire without a migration. A job of ours read back
from the store is a :class:`ScheduledJob`, what listings show. Plain data: no apscheduler here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

__all__ = ["FIRE", "OLD_FIRE", "OURS", "Dispatcher", "ScheduledJob", "fire", "live", "pending_job"]

log = logging.getLogger("bot.scheduling.scheduler")  # the scheduler's, as runner.py's

FIRE = "bot.scheduling.scheduler:_fire"  # what every stored job calls: the scheduler keeps it
OLD_FIRE = "bot.scheduler:_fire"  # its old home, pickled in earlier releases' rows
OURS = frozenset({FIRE, OLD_FIRE})


class Dispatcher(Protocol):
    """A started scheduler, as :func:`fire` reaches it."""

    def dispatch(self, kind: str, job_id: str, payload: dict[str, Any]) -> None: ...


live: dict[str, Dispatcher] = {}  # started schedulers by name, for fire


@dataclass(frozen=True)
class ScheduledJob:
    job_id: str
    kind: str
    next_run: datetime  # timezone-aware
    payload: dict[str, Any]


def fire(scheduler_name: str, kind: str, job_id: str, payload: dict[str, Any]) -> None:
    """The callable of every stored job: hand the run to the live scheduler of that name."""
    scheduler = live.get(scheduler_name)
    if scheduler is None:
        log.warning(
            "job %s (%s): no scheduler %r is running; dropped", job_id, kind, scheduler_name
        )
        return
    scheduler.dispatch(kind, job_id, payload)


def pending_job(stored: Any) -> ScheduledJob | None:
    """An apscheduler job read back; None when it is not one of ours or will not run again."""
    if stored.func_ref not in OURS or stored.next_run_time is None:
        return None
    _, kind, job_id, payload = stored.args
    return ScheduledJob(job_id, kind, stored.next_run_time, payload)
