"""Replicas sharing one PostgreSQL database: one scheduler leader fires each job exactly once.

Two schedulers on one fresh schema, each with its own store instance (as two processes have),
leasing through the database; then two real processes, the leader killed with SIGKILL before the
job is due; then apps with the reminders plugin: two replicas, a replica starting mid-send, and
one app that must leave no SQLite file behind.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bot.app import App
from bot.config.storage_url import StorageURL, parse_storage_url
from bot.errors import StoreError
from bot.scheduling.scheduler import Scheduler
from bot.storage import Storage, open_storage_url
from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.conftest import make_settings, private
from tests.postgres_support import HOW_TO_RUN, fresh_pg_url, pg_base_url
from tests.waits import STARTUP

pytestmark = pytest.mark.skipif(pg_base_url() is None, reason=HOW_TO_RUN)

LEASE = 3.0  # seconds: renewed every 0.6 s, so failover is quick enough to test
PASSWORD = "s3cr3t-Pa55word"  # never to be shown
SETTLE = 2.5  # seconds: more than two renewal ticks and two polls, for "nothing else fired"


def soon(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


async def until(predicate: Callable[[], bool], what: str, timeout: float = 15.0) -> None:  # noqa: ASYNC109
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


class Fired:
    """One handler per replica, writing into one shared list: (replica, job id, payload)."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, str, dict[str, Any]]] = []

    def handler(self, replica: str) -> Callable[[str, dict[str, Any]], Any]:
        async def record(job_id: str, payload: dict[str, Any]) -> None:
            self.runs.append((replica, job_id, payload))

        return record

    def of(self, job_id: str) -> list[str]:
        return [replica for replica, job, _ in self.runs if job == job_id]


class Replicas:
    """Schedulers on one schema, each leasing through its own store instance."""

    def __init__(self, url: str, stack: AsyncExitStack, fired: Fired) -> None:
        self.url = url
        self.where = parse_storage_url(url)
        self.stack = stack
        self.fired = fired
        self.stores: dict[str, Storage] = {}

    async def scheduler(self, replica: str, *, start: bool = True) -> Scheduler:
        store = open_storage_url(self.url)
        await store.open()
        self.stack.push_async_callback(store.close)
        self.stores[replica] = store
        sched = Scheduler(self.where, name=f"replica-{replica}", leases=store, lease_seconds=LEASE)
        sched.register("remind", self.fired.handler(replica))
        self.stack.push_async_callback(sched.shutdown)
        if start:
            await sched.start()
        return sched


@pytest.fixture
async def replicas() -> AsyncIterator[Replicas]:
    async with AsyncExitStack() as stack:
        yield Replicas(fresh_pg_url(), stack, Fired())


def stored_jobs(where: StorageURL) -> list[str]:
    """What the shared table holds, read as an operator would."""
    assert where.dsn is not None
    with psycopg.connect(where.dsn) as conn:
        rows = conn.execute(f'SELECT id FROM "{where.schema}".apscheduler_jobs ORDER BY id')
        return [str(row[0]) for row in rows]


async def test_jobs_scheduled_on_either_replica_fire_once_on_the_leader(
    replicas: Replicas,
) -> None:
    a = await replicas.scheduler("a")
    b = await replicas.scheduler("b")
    assert (a.is_leader, b.is_leader) == (True, False)  # the first to start took the lease
    jobs = [f"reminders:{n}" for n in range(10)]
    for n, job in enumerate(jobs):  # half from the follower: the leader must notice them
        (a if n % 2 else b).at("remind", job, soon(0.3 + n * 0.05), {"n": n})
    assert [j.job_id for j in b.pending()] == jobs  # every replica lists the shared store
    await until(lambda: len(replicas.fired.runs) >= len(jobs), "every job to fire")
    await asyncio.sleep(SETTLE)
    assert sorted(job for _, job, _ in replicas.fired.runs) == sorted(jobs)
    assert {replica for replica, _, _ in replicas.fired.runs} == {"a"}
    assert stored_jobs(replicas.where) == []
    assert await replicas.stores["a"].lease_holder("scheduler") == a.owner


async def test_the_leader_notices_a_job_a_follower_adds(replicas: Replicas) -> None:
    a = await replicas.scheduler("a")  # no job of its own: apscheduler alone would sleep
    b = await replicas.scheduler("b")
    b.at("remind", "reminders:1", soon(0.2), {"from": "b"})
    await until(lambda: replicas.fired.runs != [], "the leader to fire the follower's job")
    assert replicas.fired.runs == [("a", "reminders:1", {"from": "b"})]
    assert a.is_leader


async def test_a_follower_cancels_a_job_the_leader_would_fire(replicas: Replicas) -> None:
    a = await replicas.scheduler("a")
    b = await replicas.scheduler("b")
    a.at("remind", "reminders:1", soon(1.0))
    a.at("remind", "reminders:2", soon(1.0))
    assert b.cancel("reminders:1") is True
    await until(lambda: len(replicas.fired.runs) >= 1, "the remaining job to fire")
    await asyncio.sleep(SETTLE)
    assert [(r, job) for r, job, _ in replicas.fired.runs] == [("a", "reminders:2")]


async def test_leadership_moves_when_the_leader_stops(replicas: Replicas) -> None:
    a = await replicas.scheduler("a")
    b = await replicas.scheduler("b")
    a.at("remind", "reminders:1", soon(2.0), {"text": "stretch"})
    await a.shutdown()  # releases the lease: b takes it on its next tick
    assert await replicas.stores["a"].lease_holder("scheduler") is None
    await until(lambda: b.is_leader, "b to lead")
    await until(lambda: replicas.fired.runs != [], "the job to fire")
    await asyncio.sleep(SETTLE)
    assert replicas.fired.runs == [("b", "reminders:1", {"text": "stretch"})]
    assert await replicas.stores["b"].lease_holder("scheduler") == b.owner


async def test_a_leader_that_cannot_renew_pauses_and_the_follower_takes_over(
    replicas: Replicas,
) -> None:
    a = await replicas.scheduler("a")
    b = await replicas.scheduler("b")
    await replicas.stores["a"].close()  # a's database connections are gone: renewals fail
    await until(lambda: not a.is_leader, "a to pause")
    a.at("remind", "reminders:1", soon(0.2))  # its job store still works: only the lease failed
    await until(lambda: b.is_leader, "b to take the lease once it ran out", timeout=LEASE * 4)
    await until(lambda: replicas.fired.runs != [], "the job to fire")
    await asyncio.sleep(SETTLE)
    assert [(r, job) for r, job, _ in replicas.fired.runs] == [("b", "reminders:1")]
    assert not a.is_leader


async def test_a_run_claimed_by_one_scheduler_is_not_fired_by_another(
    replicas: Replicas,
) -> None:
    """Even two schedulers that both fire (no lease) cannot both fire one run."""
    url = replicas.where
    fired = replicas.fired
    async with Scheduler(url, name="free-a") as a, Scheduler(url, name="free-b") as b:
        a.register("remind", fired.handler("a"))
        b.register("remind", fired.handler("b"))
        for n in range(20):
            a.at("remind", f"reminders:{n}", soon(0.2))
        b.every("remind", "tick", timedelta(seconds=0.3))
        await until(lambda: len(fired.of("tick")) >= 5, "five ticks")
        await until(lambda: len(fired.runs) >= 25, "every one-off and five ticks")
    for n in range(20):
        assert len(fired.of(f"reminders:{n}")) == 1, fired.runs


# ------------------------------------------------------------------------ the kill -9 drill

REPLICA = textwrap.dedent(
    """
    import asyncio, sys
    from datetime import UTC, datetime, timedelta
    from bot.scheduling.scheduler import Scheduler
    from bot.storage import open_storage_url
    from bot.config.storage_url import parse_storage_url

    url, name, schedule_in = sys.argv[1], sys.argv[2], float(sys.argv[3])

    def say(*words):
        print(*words, flush=True)

    async def main():
        store = open_storage_url(url)
        await store.open()
        sched = Scheduler(parse_storage_url(url), name=name, leases=store, lease_seconds=3.0)

        async def fire(job_id, payload):
            say("FIRED", job_id, name)

        sched.register("remind", fire)
        await sched.start()
        say("STARTED", name, "leader" if sched.is_leader else "follower")
        if schedule_in > 0:
            when = datetime.now(UTC) + timedelta(seconds=schedule_in)
            sched.at("remind", "reminders:1", when, {"text": "stretch"})
            say("SCHEDULED", name)
        leading = sched.is_leader
        while True:
            await asyncio.sleep(0.05)
            if sched.is_leader != leading:
                leading = sched.is_leader
                say("LEADER" if leading else "PAUSED", name)

    asyncio.run(main())
    """
)


class ReplicaProcess:
    def __init__(self, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.proc, self.log = proc, log

    @property
    def lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8", errors="replace").splitlines()


async def start_replica(tmp_path: Path, url: str, name: str, schedule_in: float) -> ReplicaProcess:
    log = tmp_path / f"{name}.log"
    with log.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", REPLICA, url, name, str(schedule_in), stdout=sink, stderr=sink
        )
    replica = ReplicaProcess(proc, log)
    await until(
        lambda: (
            any(line.startswith("STARTED") for line in replica.lines) or proc.returncode is not None
        ),
        f"{name} to start",
        timeout=STARTUP,
    )
    assert proc.returncode is None, "\n".join(replica.lines)
    return replica


@pytest.mark.slow
async def test_kill_9_of_the_leader_before_the_job_is_due_the_follower_fires_it_once(
    tmp_path: Path,
) -> None:
    url = fresh_pg_url()
    first = await start_replica(tmp_path, url, "first", schedule_in=0)
    second = await start_replica(tmp_path, url, "second", schedule_in=2.0)
    try:
        assert "STARTED first leader" in first.lines
        assert "STARTED second follower" in second.lines
        await until(lambda: "SCHEDULED second" in second.lines, "the follower to schedule")
        first.proc.send_signal(signal.SIGKILL)  # the leader dies holding the lease
        await first.proc.wait()
        await until(lambda: "LEADER second" in second.lines, "second to lead", timeout=30)
        await until(lambda: any(x.startswith("FIRED") for x in second.lines), "the job to fire")
        await asyncio.sleep(SETTLE)
        fired = [x for x in first.lines + second.lines if x.startswith("FIRED")]
        assert fired == ["FIRED reminders:1 second"], first.lines + second.lines
        assert stored_jobs(parse_storage_url(url)) == []
    finally:
        for replica in (first, second):
            if replica.proc.returncode is None:
                replica.proc.kill()
                await replica.proc.wait()


# ------------------------------------------------------------------------ the app on PostgreSQL


async def test_the_app_on_postgresql_writes_no_sqlite_file(
    fake_llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jobs, reminders and everything else go to the database: a read-only or ephemeral working
    directory is enough for a replica."""
    monkeypatch.chdir(tmp_path)  # where relative defaults (data/...) would land
    url = fresh_pg_url()
    settings = make_settings(
        fake_llm,
        tmp_path,
        storage={"url": url},
        memory={"enabled": True, "summarize": True},  # memories and summaries: the database too
        plugins=["plugins.reminders", "plugins.memory"],
    )
    fake_llm.script(
        tool_calls(("set_reminder", {"text": "stretch", "in_minutes": 0.01})), reply("Will do.")
    )
    posted: list[str] = []

    class Chat:
        async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
            posted.append(text)

    async with App(settings) as app:
        app.outbound.register("telegram", Chat())
        await app.service.chat(private(), "remind me in a moment to stretch")
        await until(lambda: posted != [], "the reminder")
        assert app.scheduler is not None and app.scheduler.is_leader
        assert await app.store.lease_holder("scheduler") == app.scheduler.owner
    assert posted == ["⏰ Alice, you asked me to remind you: stretch"]
    assert stored_jobs(parse_storage_url(url)) == ["parlour:housekeeping"]
    assert files_under(tmp_path) == []


class Posts:
    """A replica's platform adapter: what the bot posted on its own, by replica."""

    def __init__(self, replica: str, into: list[tuple[str, str]]) -> None:
        self.replica, self.into = replica, into

    async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
        self.into.append((self.replica, text))


async def test_two_apps_a_reminder_fires_once_and_survives_its_leader_stopping(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    settings = make_settings(
        fake_llm,
        tmp_path,
        storage={"url": fresh_pg_url()},
        memory={"enabled": False},
        plugins=["plugins.reminders"],
    )
    posts: list[tuple[str, str]] = []
    fake_llm.script(
        tool_calls(("set_reminder", {"text": "stretch", "in_minutes": 0.01})),
        reply("Will do."),
        tool_calls(("set_reminder", {"text": "drink water", "in_minutes": 0.05})),
        reply("Will do."),
    )
    async with App(settings) as a, App(settings) as b:
        a.outbound.register("telegram", Posts("a", posts))
        b.outbound.register("telegram", Posts("b", posts))
        assert a.scheduler is not None and b.scheduler is not None
        assert (a.scheduler.is_leader, b.scheduler.is_leader) == (True, False)
        await b.service.chat(private(), "remind me in a moment to stretch")  # set on b
        await until(lambda: posts != [], "the first reminder")
        await a.service.chat(private(), "remind me in 3 s to drink water")  # set on a
        await a.aclose()  # the leader stops before it is due: b takes over
        await until(lambda: len(posts) >= 2, "the second reminder", timeout=20)
        await asyncio.sleep(SETTLE)
        assert b.scheduler.is_leader
        assert await b.store.kv_items("reminders", "reminder:") == []
    assert posts == [
        ("a", "⏰ Alice, you asked me to remind you: stretch"),
        ("b", "⏰ Alice, you asked me to remind you: drink water"),
    ]


class HeldPosts(Posts):
    """Posts once ``release`` is set: a send that takes its time."""

    def __init__(self, replica: str, into: list[tuple[str, str]]) -> None:
        super().__init__(replica, into)
        self.sending, self.release = asyncio.Event(), asyncio.Event()

    async def send_text(self, chat_id: str, thread_id: str | None, text: str) -> None:
        self.sending.set()
        await self.release.wait()
        await super().send_text(chat_id, thread_id, text)


async def test_a_replica_starting_while_a_reminder_is_sent_does_not_send_it_again(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    settings = make_settings(
        fake_llm,
        tmp_path,
        storage={"url": fresh_pg_url()},
        memory={"enabled": False},
        plugins=["plugins.reminders"],
    )
    posts: list[tuple[str, str]] = []
    held = HeldPosts("a", posts)
    fake_llm.script(
        tool_calls(("set_reminder", {"text": "stretch", "in_minutes": 0.01})), reply("Will do.")
    )
    async with App(settings) as a:
        a.outbound.register("telegram", held)
        await a.service.chat(private(), "remind me in a moment to stretch")
        await asyncio.wait_for(held.sending.wait(), 10)  # fired: its job left the table
        async with App(settings) as c:  # schedules every stored reminder again at its start
            c.outbound.register("telegram", Posts("c", posts))
            assert c.scheduler is not None
            await asyncio.sleep(SETTLE)  # the leader polls the table meanwhile
            (again,) = c.scheduler.pending("reminders.fire")  # for when a cut-short run is over
            assert again.next_run > datetime.now(UTC) + timedelta(minutes=9)
            held.release.set()
            await until(lambda: posts != [], "the reminder")
            await asyncio.sleep(SETTLE)
            assert await c.store.kv_items("reminders", "reminder:") == []
    assert posts == [("a", "⏰ Alice, you asked me to remind you: stretch")]


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


async def test_a_job_store_error_names_the_database_without_its_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    where = parse_storage_url(f"postgresql://postgres:{PASSWORD}@127.0.0.1:1/test?schema=x")
    sched = Scheduler(where, name="unreachable")
    with pytest.raises(StoreError) as raised:
        sched.pending()  # opens the store: nothing listens on port 1
    message = str(raised.value)
    assert message.startswith("scheduler job store postgresql://postgres:***@127.0.0.1:1/test")
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert PASSWORD not in message and PASSWORD not in caplog.text
    await sched.shutdown()


def test_a_replica_that_cannot_take_the_job_tables_lock_says_so_instead_of_hanging(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The job table is created under a lock at start; its calls block the event loop, so a
    lock held elsewhere (a stuck replica) ends in a clear error after ``LOCK_SECONDS``."""
    from bot.scheduling import postgres_jobs

    monkeypatch.setattr(postgres_jobs, "LOCK_SECONDS", 0.5)
    where = parse_storage_url(fresh_pg_url())
    assert where.dsn is not None
    with psycopg.connect(where.dsn) as holder:  # in a transaction until the block ends
        key = f"{where.schema}:apscheduler_jobs"
        holder.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))
        with pytest.raises(StoreError, match="lock timeout"):  # without it: waits forever
            postgres_jobs.open_postgres_store(where)
