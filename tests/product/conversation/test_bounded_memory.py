"""Everything kept per chat or per user in process memory stays under its cap, and what falls
out is recomputed correctly (issue 14 §6). The store's window cache is also checked end to end,
against every backend, in ``tests/conformance/test_window_bounds.py``."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.telegram import admins
from adapters.telegram.barrier import ChatBarriers
from bot.config import ChatSettings
from bot.context import Scope
from bot.conversation.locks import KeyedLocks
from bot.conversation.preferences import Preferences
from bot.conversation.preview import EditThrottle
from bot.llm.tokens import TokenCounter
from bot.storage.sqlite import SQLiteStore
from bot.storage.sqlite.window_cache import WindowCache, turn_size, window_tail
from bot.testing.fake_telegram import FakeTelegram
from bot.values import StoredTurn, TurnStatus

# -- the window cache, against a model that never forgets -------------------------------------

KEYS = [f"conv{i}" for i in range(6)]
CAPACITY = 4

_op = st.one_of(
    st.tuples(st.just("read"), st.sampled_from(KEYS)),  # a load_window that missed the cache
    st.tuples(st.just("begin"), st.sampled_from(KEYS), st.integers(0, 300)),  # text length
    st.tuples(st.just("complete"), st.integers(0, 40), st.integers(0, 300)),  # nth pending
    st.tuples(st.just("fail"), st.integers(0, 40)),
    st.tuples(st.just("get"), st.sampled_from(KEYS)),
)


class _Truth:
    """What the database holds: every conversation's turns, never evicted."""

    def __init__(self) -> None:
        self.turns: dict[str, list[StoredTurn]] = {key: [] for key in KEYS}
        self.pending: list[tuple[str, int]] = []
        self.next_id = 1

    def begin(self, key: str, chars: int) -> StoredTurn:
        user = {"role": "user", "content": "u" * chars}
        turn = StoredTurn(self.next_id, "u1", "U", TurnStatus.PENDING, (user,))
        self.next_id += 1
        self.turns[key].append(turn)
        self.pending.append((key, turn.turn_id))
        return turn

    def finish(self, nth: int, status: TurnStatus, answer: tuple[dict[str, Any], ...]) -> int:
        key, turn_id = self.pending.pop(nth % len(self.pending))
        turns = self.turns[key]
        for index, turn in enumerate(turns):
            if turn.turn_id == turn_id:
                turns[index] = replace(turn, status=status, messages=(turn.messages[0], *answer))
        return turn_id


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(_op, max_size=120),
    max_conversations=st.integers(1, 4),
    max_bytes=st.integers(500, 4000),
    max_pending=st.integers(1, 5),
)
def test_window_cache_stays_under_its_bounds_and_never_serves_a_stale_window(
    ops: list[tuple[Any, ...]], max_conversations: int, max_bytes: int, max_pending: int
) -> None:
    cache = WindowCache(max_conversations, max_bytes=max_bytes, max_pending=max_pending)
    truth = _Truth()
    for op in ops:
        if op[0] == "read":
            cache.put(
                op[1],
                "chat",
                window_tail(truth.turns[op[1]], CAPACITY),
                capacity=CAPACITY,
                version=1,
                epoch=cache.epoch,
            )
        elif op[0] == "begin":
            cache.began(op[1], truth.begin(op[1], op[2]))
        elif op[0] == "complete" and truth.pending:
            answer = ({"role": "assistant", "content": "a" * op[2]},)
            cache.completed(truth.finish(op[1], TurnStatus.ANSWERED, answer), answer)
        elif op[0] == "fail" and truth.pending:
            cache.failed(truth.finish(op[1], TurnStatus.UNANSWERED, ()))
        elif op[0] == "get":
            hit = cache.get(op[1], CAPACITY, version=1)
            assert hit is None or hit == window_tail(truth.turns[op[1]], CAPACITY)
        assert len(cache) <= max_conversations
        assert cache.size <= max_bytes
        assert cache.pending <= max_pending
    held = [cache.get(key, CAPACITY, version=1) for key in KEYS]
    assert cache.size == sum(turn_size(t) for window in held if window for t in window)
    for key, window in zip(KEYS, held, strict=True):  # every hit is the database's window
        assert window is None or window == window_tail(truth.turns[key], CAPACITY)


def test_a_window_bigger_than_the_whole_budget_is_not_kept() -> None:
    cache = WindowCache(max_bytes=10_000)
    user = {"role": "user", "content": "x" * 20_000}
    cache.put("k", "c", [StoredTurn(1, "u", "U", TurnStatus.ANSWERED, (user,))], capacity=5,
              version=1, epoch=cache.epoch)  # fmt: skip
    assert len(cache) == 0
    assert cache.size == 0
    assert cache.get("k", 5, version=1) is None  # the store reads it from disk instead


# -- token counts ------------------------------------------------------------------------------


def test_token_cache_holds_long_texts_by_digest_and_counts_them_the_same() -> None:
    counter = TokenCounter("gpt-4o-mini")
    texts = [f"message {n}: " + "lorem ipsum dolor sit amet " * 40 for n in range(50)]
    first = [counter.count_text(t) for t in texts]
    fresh = TokenCounter("gpt-4o-mini")
    assert first == [fresh._count_uncached(t) for t in texts]  # cached counts are exact
    assert [counter.count_text(t) for t in texts] == first  # and served again from the cache
    assert len(counter._long_counts) == 50
    assert all(isinstance(key, bytes) for key in counter._long_counts)  # no text is kept
    short = "hello there"
    assert counter.count_text(short) == fresh._count_uncached(short)


def test_token_cache_stays_at_its_cap() -> None:
    counter = TokenCounter("gpt-4o-mini")
    cap = counter._long_counts.maxsize
    for n in range(cap + 100):
        counter.count_text(f"{n} " + "word " * 40)
    assert len(counter._long_counts) == cap
    assert counter._cached_count.cache_info().maxsize == cap


# -- edit throttle, locks, barriers ------------------------------------------------------------


def test_edit_throttle_forgets_chats_once_they_may_edit_and_stays_at_its_cap() -> None:
    now = [0.0]
    throttle = EditThrottle(1.0, 3.0, clock=lambda: now[0], max_chats=100)
    assert throttle.ready("a", private=True)
    assert not throttle.ready("a", private=True)  # within its interval
    for n in range(1000):
        assert throttle.ready(f"group{n}", private=False)
        assert len(throttle) <= 100
    now[0] = 3.0  # every interval is over: nothing is worth remembering
    assert throttle.ready("b", private=True)
    assert len(throttle) == 1
    assert throttle.ready("group999", private=False)  # allowed again, as before the cap


def test_edit_throttle_with_no_interval_keeps_nothing() -> None:
    throttle = EditThrottle(0.0, 0.0)
    assert all(throttle.ready(n, private=False) for n in range(100))
    assert len(throttle) == 0


async def test_locks_of_many_conversations_leave_nothing_behind() -> None:
    locks = KeyedLocks()
    for n in range(2000):
        async with locks.hold(f"conv{n}"):
            assert len(locks) == 1
    assert len(locks) == 0


async def test_chat_barriers_are_gone_once_released() -> None:
    barriers = ChatBarriers()
    order: list[str] = []

    async def migrate(chat: int) -> None:
        async with barriers.hold(chat):
            await asyncio.sleep(0)
            order.append(f"migrated {chat}")

    async def message(chat: int) -> None:
        await barriers.wait(chat)
        order.append(f"message {chat}")

    for chat in range(500):
        await asyncio.gather(migrate(chat), message(chat))
    assert order == [f"{what} {chat}" for chat in range(500) for what in ("migrated", "message")]
    assert len(barriers._barriers) == 0


def test_a_window_whose_pending_turn_is_forgotten_is_dropped_with_it() -> None:
    """Past ``max_pending`` the oldest pending turn's answer could no longer reach its window:
    the window goes too, so it is read again (answered) rather than served with a stale turn."""
    cache = WindowCache(max_pending=1)
    question = {"role": "user", "content": "q"}
    for key in ("a", "b"):
        cache.put(key, "c", [], capacity=5, version=1, epoch=cache.epoch)
    cache.began("a", StoredTurn(1, "u", "U", TurnStatus.PENDING, (question,)))
    cache.began("b", StoredTurn(2, "u", "U", TurnStatus.PENDING, (question,)))  # 1 forgotten
    cache.completed(1, [{"role": "assistant", "content": "answer"}])
    assert cache.get("a", 5, version=1) is None
    assert cache.get("b", 5, version=1) is not None


# -- preferences ---------------------------------------------------------------------------


async def test_preferences_hold_only_chats_with_an_override(tmp_path: Path) -> None:
    defaults = ChatSettings()
    async with SQLiteStore(tmp_path / "prefs.db") as store:
        prefs = Preferences(store, defaults)
        await prefs.load()
        for n in range(50):
            await prefs.set_system_prompt(f"tg:{n}", f"be brief, chat {n}")
        await prefs.set_scope("tg:7", Scope.USER)
        assert len(prefs) == 50
        for n in range(50):
            await prefs.set_system_prompt(f"tg:{n}", None)
        assert len(prefs) == 1  # only tg:7 still differs from the defaults
        assert prefs.system_prompt("tg:3") == defaults.system_prompt
        reloaded = Preferences(store, defaults)
        await reloaded.load()
    assert len(reloaded) == 1
    assert reloaded.scope("tg:7") is Scope.USER
    assert reloaded.system_prompt("tg:7") == defaults.system_prompt


# -- Telegram admins ---------------------------------------------------------------------------


async def test_admin_cache_stays_at_its_cap_and_asks_again_for_what_it_dropped(
    fake_telegram: FakeTelegram, monkeypatch: pytest.MonkeyPatch
) -> None:
    tg = fake_telegram
    monkeypatch.setattr(admins, "MAX_ENTRIES", 5)
    group = tg.group(-100, "Team", supergroup=True)
    for user in range(1, 11):
        tg.user(user, f"User {user}")
        tg.set_member(group["id"], user, "administrator" if user % 2 else "member")
    now = [0.0]
    session = AiohttpSession(api=TelegramAPIServer.from_base(tg.api_server))
    async with Bot(tg.token, session=session) as bot:
        cache = admins.AdminCache(bot, ttl=60.0, clock=lambda: now[0])
        answers = [await cache.is_admin(-100, user) for user in range(1, 11)]
        assert len(cache) == 5
        assert await cache.is_admin(-100, 10) is False  # still cached: no new lookup
        assert await cache.is_admin(-100, 1) is True  # dropped at the cap: asked again
        now[0] = 61.0  # every answer expired: a demotion is seen
        tg.set_member(group["id"], 1, "member")
        assert await cache.is_admin(-100, 1) is False
        assert len(cache) == 1
    assert answers == [user % 2 == 1 for user in range(1, 11)]
    asked = [int(c.params["user_id"]) for c in tg.calls if c.method == "getChatMember"]
    assert asked == [*range(1, 11), 1, 1]
