"""The persistent scheduler: jobs fire with their payload, survive restarts, run when overdue."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.scheduling import stored_jobs
from bot.scheduling.scheduler import ScheduledJob, Scheduler, _fire

Call = tuple[str, dict[str, Any]]


def soon(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


class Recorder:
    """A handler that queues its calls so a test can await them."""

    def __init__(self) -> None:
        self.calls: asyncio.Queue[Call] = asyncio.Queue()

    async def __call__(self, job_id: str, payload: dict[str, Any]) -> None:
        self.calls.put_nowait((job_id, payload))

    async def next(self, within: float = 1.0) -> Call:
        return await asyncio.wait_for(self.calls.get(), within)

    async def nothing_for(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        assert self.calls.empty(), self.calls.get_nowait()


@pytest.fixture
async def sched(tmp_path: Path) -> AsyncIterator[Scheduler]:
    async with Scheduler(tmp_path / "data" / "jobs.sqlite") as scheduler:
        yield scheduler


async def test_job_fires_with_its_payload(sched: Scheduler) -> None:
    rec = Recorder()
    sched.register("remind", rec)
    payload: dict[str, Any] = {"chat": "tg:1", "text": "tea", "n": [1, 2]}
    sched.at("remind", "reminders:1", soon(0.1), payload)
    payload["text"] = "changed after scheduling"
    assert await rec.next() == ("reminders:1", {"chat": "tg:1", "text": "tea", "n": [1, 2]})
    assert sched.pending() == []  # a one-off leaves the store once it fired
    assert sched.path.exists()


async def test_pending_lists_filters_and_cancel_removes(sched: Scheduler) -> None:
    rec = Recorder()
    sched.register("remind", rec)
    later = soon(3600)
    sched.at("remind", "reminders:2", later + timedelta(minutes=1), {"n": 2})
    sched.at("remind", "reminders:1", later, {"n": 1})
    sched.every("tick", "tick:1", timedelta(hours=1), first=later + timedelta(minutes=2))
    assert sched.pending() == [
        ScheduledJob("reminders:1", "remind", later, {"n": 1}),
        ScheduledJob("reminders:2", "remind", later + timedelta(minutes=1), {"n": 2}),
        ScheduledJob("tick:1", "tick", later + timedelta(minutes=2), {}),
    ]
    assert [j.job_id for j in sched.pending("tick")] == ["tick:1"]
    assert all(j.next_run.tzinfo is not None for j in sched.pending())

    sched.at("remind", "reminders:3", soon(0.2))
    assert sched.cancel("reminders:3") is True
    assert sched.cancel("reminders:3") is False
    assert sched.cancel("no-such-job") is False
    await rec.nothing_for(0.4)
    assert [j.job_id for j in sched.pending("remind")] == ["reminders:1", "reminders:2"]


async def test_same_id_replaces_the_job(sched: Scheduler) -> None:
    rec = Recorder()
    sched.register("remind", rec)
    sched.at("remind", "reminders:7", soon(3600), {"v": 1})
    sched.at("remind", "reminders:7", soon(0.1), {"v": 2})
    assert [(j.job_id, j.payload) for j in sched.pending()] == [("reminders:7", {"v": 2})]
    assert await rec.next() == ("reminders:7", {"v": 2})
    await rec.nothing_for(0.2)


async def test_handler_exception_is_logged_and_later_jobs_still_run(
    sched: Scheduler, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(job_id: str, payload: dict[str, Any]) -> None:
        raise RuntimeError("boom")

    rec = Recorder()
    sched.register("broken", broken)
    sched.register("ok", rec)
    sched.at("broken", "broken:1", soon(0.05))
    sched.at("ok", "ok:1", soon(0.2))
    assert await rec.next() == ("ok:1", {})
    (record,) = [r for r in caplog.records if r.name == "bot.scheduling.scheduler"]
    assert record.levelno == logging.ERROR
    assert "broken:1" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)


async def test_a_slow_handler_does_not_hold_up_others(sched: Scheduler) -> None:
    release = asyncio.Event()
    rec = Recorder()

    async def slow(job_id: str, payload: dict[str, Any]) -> None:
        await rec(job_id, payload)
        await release.wait()

    sched.register("slow", slow)
    sched.register("fast", rec)
    sched.at("slow", "slow:1", soon(0.05))
    sched.at("fast", "fast:1", soon(0.15))
    assert await rec.next() == ("slow:1", {})
    assert await rec.next() == ("fast:1", {})
    release.set()


async def test_job_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    async with Scheduler(path) as first:
        first.at("remind", "reminders:9", soon(0.4), {"text": "stretch"})
    rec = Recorder()
    second = Scheduler(path)
    second.register("remind", rec)
    async with second:
        assert [j.job_id for j in second.pending()] == ["reminders:9"]
        assert await rec.next() == ("reminders:9", {"text": "stretch"})


async def test_jobs_due_during_downtime_run_at_start(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    next_regular = time.monotonic() + 1.85  # the first run after the downtime, on schedule
    async with Scheduler(path) as before:
        before.at("remind", "reminders:1", soon(0.2), {"text": "late"})
        # runs at +0.05, +0.65, +1.25, +1.85 s: three of them fall in the downtime below
        before.every("tick", "tick:1", timedelta(seconds=0.6), first=soon(0.05))
    # Down for longer than apscheduler's default misfire grace time (1 s) past the one-off.
    await asyncio.sleep(1.45)
    reminders, ticks = Recorder(), Recorder()
    after = Scheduler(path)
    after.register("remind", reminders)
    after.register("tick", ticks)
    # Set-up code re-declares its repeating jobs before start: that must not postpone the
    # missed run to one interval from now.
    after.every("tick", "tick:1", timedelta(seconds=0.6))
    async with after:
        assert await reminders.next(within=0.5) == ("reminders:1", {"text": "late"})
        assert await ticks.next(within=0.5) == ("tick:1", {})
        # Coalesced: the missed runs run once, not three times, before the next regular one
        # (a loaded machine may get here late: then there is less, or nothing, left to watch).
        if (left := next_regular - time.monotonic() - 0.05) > 0:
            await ticks.nothing_for(left)
        assert [j.job_id for j in after.pending()] == ["tick:1"]


async def test_every_repeats(sched: Scheduler) -> None:
    rec = Recorder()
    sched.register("tick", rec)
    sched.every("tick", "tick:fast", timedelta(seconds=0.1), {"k": "v"})
    for _ in range(3):
        assert await rec.next() == ("tick:fast", {"k": "v"})
    assert [j.job_id for j in sched.pending()] == ["tick:fast"]
    assert sched.cancel("tick:fast") is True


async def test_unknown_kind_is_logged_and_dropped(
    sched: Scheduler, caplog: pytest.LogCaptureFixture
) -> None:
    rec = Recorder()
    sched.register("known", rec)
    sched.register("unloaded-plugin", rec)
    sched.unregister("unloaded-plugin")  # a plugin whose setup failed is rolled back
    sched.at("unloaded-plugin", "orphan:1", soon(0.05), {"x": 1})
    sched.at("known", "known:1", soon(0.2))
    assert await rec.next() == ("known:1", {})
    (record,) = [r for r in caplog.records if r.name == "bot.scheduling.scheduler"]
    assert record.levelno == logging.WARNING
    assert "orphan:1" in record.getMessage() and "unloaded-plugin" in record.getMessage()
    assert sched.pending() == []


async def test_jobs_scheduled_before_start_wait_for_it(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    async with Scheduler(path) as first:
        first.at("remind", "reminders:old", soon(3600))
    rec = Recorder()
    sched = Scheduler(path)
    sched.register("remind", rec)
    assert [j.job_id for j in sched.pending()] == ["reminders:old"]  # opens the stored jobs
    assert sched.cancel("reminders:old") is True
    sched.at("remind", "reminders:new", soon(0.05), {"n": 1})
    await rec.nothing_for(0.25)  # due, but not started
    async with sched:
        assert await rec.next() == ("reminders:new", {"n": 1})
        assert sched.pending() == []


async def test_every_redeclared_keeps_its_place_unless_changed(sched: Scheduler) -> None:
    sched.every("tick", "tick:1", timedelta(hours=1), {"v": 1})
    (before,) = sched.pending()
    await asyncio.sleep(0.05)
    sched.every("tick", "tick:1", timedelta(hours=1), {"v": 2})
    (same,) = sched.pending()
    assert (same.next_run, same.payload) == (before.next_run, {"v": 2})
    sched.every("tick", "tick:1", timedelta(hours=2))
    (changed,) = sched.pending()
    assert changed.next_run - before.next_run > timedelta(minutes=59)
    aligned = datetime(2000, 1, 1, tzinfo=UTC)
    sched.every("tick", "tick:1", timedelta(hours=1), first=aligned)
    (on_grid,) = sched.pending()
    assert (on_grid.next_run.minute, on_grid.next_run.second) == (0, 0)
    assert on_grid.next_run - datetime.now(UTC) <= timedelta(hours=1)


async def test_bad_arguments_are_rejected(tmp_path: Path) -> None:
    sched = Scheduler(tmp_path / "jobs.sqlite")
    async with sched:
        with pytest.raises(ValueError, match="timezone-aware"):
            sched.at("k", "k:1", datetime.now() + timedelta(hours=1))
        with pytest.raises(ValueError, match="timezone-aware"):
            sched.every("k", "k:2", timedelta(hours=1), first=datetime.now())
        with pytest.raises(ValueError, match="positive"):
            sched.every("k", "k:3", timedelta(0))
        with pytest.raises(ValueError, match="non-empty"):
            sched.at("k", "", soon(60))
        with pytest.raises(TypeError):
            sched.at("k", "k:4", soon(60), {"when": datetime.now(UTC)})
        with pytest.raises(RuntimeError, match="already running"):
            await Scheduler(tmp_path / "other.sqlite").start()
        with pytest.raises(RuntimeError, match="once"):
            await sched.start()
        assert sched.pending() == []
    with pytest.raises(RuntimeError, match="shut down"):
        sched.at("k", "k:5", soon(60))


async def test_shutdown_cancels_handlers_and_leaves_nothing_running(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    threads_before = set(threading.enumerate())
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def forever(job_id: str, payload: dict[str, Any]) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    sched = Scheduler(tmp_path / "jobs.sqlite")
    sched.register("forever", forever)
    await sched.start()
    sched.at("forever", "forever:1", soon(0.05))
    sched.every("forever", "forever:2", timedelta(hours=1))
    await asyncio.wait_for(started.wait(), 1)
    await sched.shutdown()
    await sched.shutdown()  # idempotent

    assert cancelled.is_set()
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert set(threading.enumerate()) == threads_before
    assert "parlour" not in stored_jobs.live
    _fire("parlour", "forever", "forever:3", {})  # a stray fire after shutdown is dropped
    assert "no scheduler 'parlour' is running" in caplog.text

    async with Scheduler(tmp_path / "jobs.sqlite") as again:  # the name is free again
        assert [j.job_id for j in again.pending()] == ["forever:2"]


async def test_a_job_stored_before_the_scheduler_moved_still_fires(tmp_path: Path) -> None:
    """apscheduler pickles the function a job calls by name; jobs stored by earlier releases
    name ``bot.scheduler:_fire`` (the module's old home) and must load and fire as they are."""
    import pickle
    import sqlite3

    path = tmp_path / "jobs.sqlite"
    async with Scheduler(path) as first:
        first.at("remind", "reminders:7", soon(0.5), {"text": "old"})
    with sqlite3.connect(path) as db:
        [(job_id, blob)] = db.execute("SELECT id, job_state FROM apscheduler_jobs").fetchall()
        state = pickle.loads(blob)
        assert state["func"] == "bot.scheduling.scheduler:_fire"
        state["func"] = "bot.scheduler:_fire"  # as the release before the move stored it
        db.execute(
            "UPDATE apscheduler_jobs SET job_state = ? WHERE id = ?", (pickle.dumps(state), job_id)
        )
    rec = Recorder()
    second = Scheduler(path)
    second.register("remind", rec)
    async with second:
        assert [j.job_id for j in second.pending()] == ["reminders:7"]
        assert await rec.next() == ("reminders:7", {"text": "old"})


async def test_a_jobs_file_written_through_sqlalchemy_loads_and_fires(tmp_path: Path) -> None:
    """Releases before issue 31 wrote the jobs file with apscheduler's SQLAlchemy store; the
    standard-library store reads its table as it is (and a one-off still fires once)."""
    from apscheduler.job import Job
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.background import BackgroundScheduler
    from apscheduler.triggers.date import DateTrigger

    path = tmp_path / "jobs.sqlite"
    old = SQLAlchemyJobStore(url=f"sqlite:///{path}")
    aps = BackgroundScheduler()
    old.start(aps, "default")  # creates the table, as apscheduler's start does
    when = soon(0.3)
    job = Job(
        aps,
        id="reminders:3",
        func="bot.scheduling.scheduler:_fire",
        args=("parlour", "remind", "reminders:3", {"text": "old file"}),
        kwargs={},
        trigger=DateTrigger(run_date=when),
        executor="default",
        misfire_grace_time=None,
        coalesce=True,
        max_instances=1,
        next_run_time=when,
        name="reminders:3",
    )
    old.add_job(job)
    old.shutdown()
    rec = Recorder()
    again = Scheduler(path)
    again.register("remind", rec)
    async with again:
        assert [j.job_id for j in again.pending()] == ["reminders:3"]
        assert await rec.next() == ("reminders:3", {"text": "old file"})
        assert again.pending() == []
