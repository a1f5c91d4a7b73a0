"""Telegram behind a load balancer: two replicas on one database (issue 14).

Two ``App`` + ``TelegramAdapter`` pairs in webhook mode, each with its own webhook port, share one
store (a SQLite file, or a fresh PostgreSQL schema). The fake Telegram posts every update to a
round-robin load balancer in front of them, which loses chosen answers so that Telegram delivers
those updates again, and the retry lands on the *other* replica. What must hold: every message
answered once, each chat's turns one at a time and in ``update_id`` order (the fake LLM saw each
turn with the previous one already in its history), ``setWebhook`` called once, one poller per
bot token, a dead replica's claim taken over, a poison update given up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest

from adapters.telegram.adapter import TelegramAdapter
from adapters.telegram.lanes import NO_CHAT_LANE, update_lane
from bot.app import App
from bot.errors import ConfigError
from bot.storage import Storage, open_storage
from bot.storage.coordination import INBOX_MAX_ATTEMPTS
from bot.testing.fake_llm import FakeLLM
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import make_settings
from tests.postgres_support import HOW_TO_RUN, fresh_pg_url, pg_base_url
from tests.telegram_balancer import PATH, RoundRobin, balancer
from tests.telegram_harness import free_port, telegram_section

SECRET = "replica-secret-token"
POLLING = {"polling_timeout": 1, "stream": False}


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """One database both replicas open: a SQLite file, or one fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return {"path": str(tmp_path / "shared.db")}
    if pg_base_url() is None:
        pytest.skip(HOW_TO_RUN)
    return {"url": fresh_pg_url(), "path": str(tmp_path / "unused.db")}


@dataclass
class Replica:
    app: App
    adapter: TelegramAdapter
    task: asyncio.Task[None]


@asynccontextmanager
async def replica(
    fake: FakeLLM,
    tg: FakeTelegram,
    tmp_path: Path,
    storage: dict[str, Any],
    index: int,
    telegram: dict[str, Any],
) -> AsyncIterator[Replica]:
    """One replica (its own app, adapter and jobs file), running until the block ends."""
    settings = make_settings(
        fake,
        tmp_path,
        storage={**storage, "jobs_path": str(tmp_path / f"jobs-{index}.sqlite")},
        telegram=telegram_section(tg, **telegram),
        memory={"enabled": False},  # long-term memory has nothing to do with who runs an update
    )
    async with App(settings) as app:
        adapter = TelegramAdapter(app.platform)
        task = asyncio.ensure_future(adapter.run())
        try:
            ready = asyncio.ensure_future(adapter.ready.wait())
            await asyncio.wait({task, ready}, timeout=15, return_when=asyncio.FIRST_COMPLETED)
            ready.cancel()
            if task.done():
                task.result()  # raise what stopped it
            assert adapter.ready.is_set(), "the replica did not start in 15 s"
            yield Replica(app, adapter, task)
        finally:
            await adapter.stop()
            await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 15)


def webhook_section(lb: RoundRobin, port: int, **extra: Any) -> dict[str, Any]:
    hook = {
        "url": lb.url,
        "path": PATH,
        "listen_host": "127.0.0.1",
        "listen_port": port,
        "secret_token": SECRET,
        **extra,
    }
    return {"mode": "webhook", "webhook": hook, "stream": False}


def asked(fake: FakeLLM) -> list[list[str]]:
    """The user messages of every request the model got, in arrival order."""
    return [
        [str(m["content"]) for m in r.json["messages"] if m["role"] == "user"]
        for r in fake.chat_requests
    ]


# ------------------------------------------------------------------------------ the tests


async def test_two_replicas_answer_every_update_once_in_order_per_chat(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path, storage: dict[str, Any]
) -> None:
    tg = fake_telegram
    fake_llm.latency = 0.15  # turns overlap: a chat's next message arrives while one runs
    ports = [free_port(), free_port()]
    users = [tg.user(10 + i, f"User{i}") for i in range(3)]
    chats = [tg.private_chat(user) for user in users]
    async with balancer(ports) as lb:
        sections = [webhook_section(lb, port) for port in ports]
        async with (
            replica(fake_llm, tg, tmp_path, storage, 0, sections[0]),
            replica(fake_llm, tg, tmp_path, storage, 1, sections[1]),
        ):
            sent: dict[int, list[str]] = {chat["id"]: [] for chat in chats}
            for n in range(12):
                chat, user = chats[n % 3], users[n % 3]
                text = f"message {n} from {user['first_name']}"
                tg.send(chat, user, text)
                sent[chat["id"]].append(text)
                if n % 3 == 1:  # this one's 200 is lost: Telegram sends it again
                    lb.lose.add(tg.pending_updates[-1]["update_id"])
            for chat in chats:
                await tg.wait_for_message(chat["id"], count=4, timeout=20)
            await tg.wait_idle(quiet=0.5, timeout=10)
    redelivered = lb.redelivered()
    assert len(redelivered) == 4  # each went to both replicas, and both said 200
    assert all(sorted(replicas) == [0, 1] for replicas in redelivered.values())
    for chat in chats:  # answered once each, in order
        texts = [m["text"] for m in tg.messages(chat["id"])]
        assert texts == [f"echo: {text}" for text in sent[chat["id"]]]
    assert len(fake_llm.chat_requests) == 12
    for chat in chats:  # one at a time: each turn saw every earlier turn of its chat
        mine = [users for users in asked(fake_llm) if users[-1] in sent[chat["id"]]]
        assert mine == [sent[chat["id"]][: k + 1] for k in range(4)]
    served = {post.replica for post in lb.forwarded if post.status == 200}
    assert served == {0, 1}
    assert [c.method for c in tg.calls].count("setWebhook") == 1


async def test_set_webhook_is_called_once_by_two_replicas_starting_together(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path, storage: dict[str, Any]
) -> None:
    tg = fake_telegram
    ports = [free_port(), free_port()]
    async with balancer(ports) as lb:
        first, second = (webhook_section(lb, port) for port in ports)
        async with contextlib.AsyncExitStack() as stack:
            await asyncio.gather(
                stack.enter_async_context(replica(fake_llm, tg, tmp_path, storage, 0, first)),
                stack.enter_async_context(replica(fake_llm, tg, tmp_path, storage, 1, second)),
            )
            info = [c for c in tg.calls if c.method == "getWebhookInfo"]
            assert len(info) >= 2  # each replica looked
        # A rolling restart: the webhook matches, so nobody sets it again.
        async with replica(fake_llm, tg, tmp_path, storage, 2, first):
            pass
        methods = [c.method for c in tg.calls]
        assert methods.count("setWebhook") == 1
        # ... until the configured max_connections differ from what Telegram was told
        fewer = webhook_section(lb, ports[0], max_connections=20)
        async with replica(fake_llm, tg, tmp_path, storage, 3, fewer):
            pass
    methods = [c.method for c in tg.calls]
    assert methods.count("setWebhook") == 2
    assert "deleteWebhook" not in methods
    first_set, second_set = [c for c in tg.calls if c.method == "setWebhook"]
    assert first_set.params["url"] == second_set.params["url"] == lb.url
    assert int(first_set.params["max_connections"]) == 100  # the default: a burst comes in faster
    assert int(second_set.params["max_connections"]) == 20


async def test_a_second_poller_of_the_same_token_is_refused(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path, storage: dict[str, Any]
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    async with replica(fake_llm, tg, tmp_path, storage, 0, POLLING) as first:
        with pytest.raises(ConfigError) as refused:
            async with replica(fake_llm, tg, tmp_path, storage, 1, POLLING):
                pass
        holder = await first.app.store.lease_holder(f"telegram:poller:{tg.bot_id}")
        assert holder == first.adapter.owner is not None
        assert str(refused.value) == (
            f"another process ({holder.rsplit(':', 1)[0]}) is already long-polling this bot "
            "token; run one poller, or use webhook mode for several replicas "
            "(telegram.mode: webhook)"
        )
        tg.send(tg.private_chat(alice), alice, "still polling?")  # the first one still works
        [answer] = await tg.wait_for_message(alice["id"])
        assert answer["text"] == "echo: still polling?"
    # The lease went with the first poller: a new one starts.
    async with replica(fake_llm, tg, tmp_path, storage, 1, POLLING):
        pass


def private_update(update_id: int, user: dict[str, Any], text: str) -> str:
    """A message update as Telegram posts it (JSON text), for the inbox directly."""
    sender = {"id": user["id"], "is_bot": False, "first_name": user["first_name"]}
    chat = {"id": user["id"], "type": "private", "first_name": user["first_name"]}
    message = {"message_id": update_id, "date": 1, "chat": chat, "from": sender, "text": text}
    return json.dumps({"update_id": update_id, "message": message})


@asynccontextmanager
async def dead_replica(
    fake: FakeLLM, tmp_path: Path, storage: dict[str, Any]
) -> AsyncIterator[Storage]:
    """The shared store, as a replica that is about to die left it (open, then gone)."""
    store = open_storage(make_settings(fake, tmp_path, storage=storage, memory={"enabled": False}))
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def test_an_update_a_dead_replica_claimed_is_answered_by_another(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path, storage: dict[str, Any]
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    source = f"telegram:{tg.bot_id}"
    async with dead_replica(fake_llm, tmp_path, storage) as store:
        # It acknowledged the update (stored it) and claimed it, then was killed.
        assert await store.inbox_put(source, 1, str(alice["id"]), private_update(1, alice, "one"))
        [claimed] = await store.inbox_claim(source, "otherhost:4242:deadbeef", 2.0, 10)
        assert claimed.update_id == 1
    port = free_port()
    async with balancer([port]) as lb:
        section = webhook_section(lb, port, lease_seconds=1.0)
        async with replica(fake_llm, tg, tmp_path, storage, 0, section) as live:
            tg.send(chat, alice, "two")  # behind the dead replica's update, in its lane
            await tg.wait_for_message(chat["id"], count=2, timeout=20)
            await tg.wait_idle(quiet=0.3)
            assert await live.app.store.inbox_pending(source) == 0
            assert live.adapter.worker is not None and live.adapter.worker.finished == 2
    assert [m["text"] for m in tg.messages(chat["id"])] == ["echo: one", "echo: two"]
    assert asked(fake_llm) == [["one"], ["one", "two"]]


async def test_a_poison_update_is_given_up_and_its_chat_goes_on(
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    tmp_path: Path,
    storage: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    tg = fake_telegram
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    source = f"telegram:{tg.bot_id}"
    lane = str(alice["id"])
    async with dead_replica(fake_llm, tmp_path, storage) as store:
        assert await store.inbox_put(source, 1, lane, private_update(1, alice, "the pill xyzzy"))
        assert await store.inbox_put(source, 2, lane, private_update(2, alice, "after it"))
        for attempt in range(1, INBOX_MAX_ATTEMPTS + 1):  # it killed every replica that ran it
            [claimed] = await store.inbox_claim(source, f"host:{attempt}:dead", 0.05, 10)
            assert (claimed.update_id, claimed.attempts) == (1, attempt)
            await asyncio.sleep(0.1)  # that replica's lease runs out
    caplog.set_level(logging.INFO)
    port = free_port()
    async with balancer([port]) as lb:
        section = webhook_section(lb, port, lease_seconds=1.0)
        async with replica(fake_llm, tg, tmp_path, storage, 0, section) as live:
            await tg.wait_for_message(chat["id"], timeout=20)
            await tg.wait_idle(quiet=0.3)
            assert await live.app.store.inbox_pending(source) == 0
            assert live.adapter.worker is not None and live.adapter.worker.given_up == 1
    assert [m["text"] for m in tg.messages(chat["id"])] == ["echo: after it"]
    assert asked(fake_llm) == [["after it"]]  # the poison never reached the model
    [given_up] = [r for r in caplog.records if "given up" in r.getMessage()]
    assert "update 1 " in given_up.getMessage()
    assert "xyzzy" not in caplog.text  # ids in the log, never the content


async def test_a_poller_that_loses_its_lease_stops_with_an_error(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path, storage: dict[str, Any]
) -> None:
    tg = fake_telegram
    polling = {**POLLING, "poller_lease_seconds": 3.0}
    async with replica(fake_llm, tg, tmp_path, storage, 0, polling) as poller:
        name = f"telegram:poller:{tg.bot_id}"
        store = poller.app.store
        # Its database stalled past the lease, and another process took the token over.
        await store.release_lease(name, poller.adapter.owner)
        assert await store.acquire_lease(name, "otherhost:99:cafe", 60.0)
        done, _ = await asyncio.wait({poller.task}, timeout=10)
        assert done, "polling went on without the lease"
        with pytest.raises(ConfigError, match=r"poller lease went to another process"):
            poller.task.result()
        polls = sum(c.method == "getUpdates" for c in tg.calls)
        await asyncio.sleep(1.5)  # longer than polling_timeout: a poll still running would show
        assert sum(c.method == "getUpdates" for c in tg.calls) == polls
        assert await store.lease_holder(name) == "otherhost:99:cafe"


async def rename_inbox(storage: dict[str, Any], old: str, new: str) -> None:
    """Take the inbox table away (or back) behind the store's back: a database that fails."""
    if "url" not in storage:
        with contextlib.closing(sqlite3.connect(storage["path"])) as db:
            db.execute(f"ALTER TABLE {old} RENAME TO {new}")
            db.commit()
        return
    import asyncpg

    url = storage["url"]
    schema = parse_qs(urlsplit(url).query)["schema"][0]
    conn = await asyncpg.connect(url.split("?", 1)[0])
    try:
        await conn.execute(f'ALTER TABLE "{schema}".{old} RENAME TO {new}')
    finally:
        await conn.close()


async def health(port: int) -> tuple[int, dict[str, Any]]:
    """What a load balancer's health check gets from a replica."""
    async with (
        aiohttp.ClientSession() as client,
        client.get(f"http://127.0.0.1:{port}/healthz") as answer,
    ):
        return answer.status, await answer.json()


async def test_an_update_that_cannot_be_stored_gets_500_and_comes_again(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path, storage: dict[str, Any]
) -> None:
    tg = fake_telegram
    tg.webhook_retry_delays = (0.5, 1.0, 2.0, 4.0)
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    port = free_port()
    async with (
        balancer([port]) as lb,
        replica(fake_llm, tg, tmp_path, storage, 0, webhook_section(lb, port)),
    ):
        assert await health(port) == (200, {"ok": True, "pending": 0, "running": 0})
        await rename_inbox(storage, "inbox", "inbox_away")
        tg.send(chat, alice, "kept for later")
        await tg.wait_until(lambda: 500 in tg.webhook_statuses, timeout=10)
        assert tg.messages(chat["id"]) == []  # not acknowledged, so not answered either
        status, _ = await health(port)
        assert status == 503  # the load balancer takes this replica out
        await rename_inbox(storage, "inbox_away", "inbox")
        [answer] = await tg.wait_for_message(chat["id"], timeout=15)
        await tg.wait_idle(quiet=0.3)
        assert await health(port) == (200, {"ok": True, "pending": 0, "running": 0})
    assert answer["text"] == "echo: kept for later"
    statuses = tg.webhook_statuses
    assert statuses[0] == 500 and statuses[-1] == 200
    assert len(fake_llm.chat_requests) == 1


async def test_a_poller_killed_a_moment_ago_on_this_host_is_not_waited_for(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path, storage: dict[str, Any]
) -> None:
    tg = fake_telegram
    name = f"telegram:poller:{tg.bot_id}"
    # A process of this host (this pid, an instance no longer open: a container restarted)
    # held the lease for another minute when it was killed.
    gone = f"{socket.gethostname()}:{os.getpid()}:0000dead"
    async with dead_replica(fake_llm, tmp_path, storage) as store:
        assert await store.acquire_lease(name, gone, 60.0)
    async with replica(fake_llm, tg, tmp_path, storage, 0, POLLING) as poller:
        assert await poller.app.store.lease_holder(name) == poller.adapter.owner
        alice = tg.user(7, "Alice")
        tg.send(tg.private_chat(alice), alice, "back already")
        [answer] = await tg.wait_for_message(alice["id"])
        assert answer["text"] == "echo: back already"


@pytest.mark.parametrize(
    ("update", "lane"),
    [
        ({"update_id": 1, "message": {"chat": {"id": -100}}}, "-100"),
        ({"update_id": 2, "edited_message": {"chat": {"id": 7}}}, "7"),
        ({"update_id": 3, "channel_post": {"chat": {"id": -1009}}}, "-1009"),
        # "this group became a supergroup" runs with the supergroup's own messages
        ({"update_id": 4, "message": {"chat": {"id": -5}, "migrate_to_chat_id": -1005}}, "-1005"),
        ({"update_id": 5, "message": {"chat": {"id": -1005}, "migrate_from_chat_id": -5}}, "-1005"),
        ({"update_id": 6, "callback_query": {"message": {"chat": {"id": 42}}}}, "42"),
        ({"update_id": 7, "my_chat_member": {"chat": {"id": -3}}}, "-3"),
        ({"update_id": 8, "inline_query": {"from": {"id": 9}}}, NO_CHAT_LANE),
        ({"update_id": 9, "message": {"chat": {"id": True}}}, NO_CHAT_LANE),
    ],
)
def test_an_update_runs_in_its_chats_lane(update: dict[str, Any], lane: str) -> None:
    assert update_lane(update) == lane


async def test_a_replica_stopping_finishes_the_update_it_runs(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path, storage: dict[str, Any]
) -> None:
    tg = fake_telegram
    fake_llm.latency = 1.0
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    port = free_port()
    async with (
        balancer([port]) as lb,
        replica(fake_llm, tg, tmp_path, storage, 0, webhook_section(lb, port)) as one,
    ):
        tg.send(chat, alice, "answer before you go")
        await tg.wait_until(lambda: bool(fake_llm.chat_requests), timeout=10)
        await one.adapter.stop()  # SIGTERM mid-turn
        await asyncio.wait_for(asyncio.gather(one.task), 15)
        assert [m["text"] for m in tg.messages(chat["id"])] == ["echo: answer before you go"]
        assert await one.app.store.inbox_pending(one.adapter.inbox_source) == 0


async def test_a_replica_runs_at_most_max_running_updates_at_once(
    fake_llm: FakeLLM, fake_telegram: FakeTelegram, tmp_path: Path, storage: dict[str, Any]
) -> None:
    tg = fake_telegram
    fake_llm.latency = 0.3
    users = [tg.user(20 + i, f"User{i}") for i in range(2)]
    chats = [tg.private_chat(user) for user in users]
    port = free_port()
    async with balancer([port]) as lb:
        section = webhook_section(lb, port, max_running=1)
        async with replica(fake_llm, tg, tmp_path, storage, 0, section):
            for chat, user in zip(chats, users, strict=True):
                tg.send(chat, user, f"hello from {user['first_name']}")
            for chat in chats:  # both answered: the second waited in the inbox, not lost
                await tg.wait_for_message(chat["id"], count=1, timeout=20)
    first, second = fake_llm.chat_requests
    assert second.received_at >= first.received_at + fake_llm.latency  # one after the other
