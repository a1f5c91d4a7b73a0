"""The long-term memory store: scopes, FTS5 recall in English, Chinese and Japanese, isolation."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.context import ChatContext, ChatType
from bot.history.migrations import MIGRATIONS
from bot.history.sqlite import SQLiteStore, _statements
from bot.history.store import NewTurn
from bot.memory_store import (
    _SEARCH,
    _SEARCH_TURNS,
    Memory,
    MemoryScope,
    MemoryStore,
    match_query,
    search_form,
)


def group(user: str = "1", chat: str = "-100", platform: str = "telegram") -> ChatContext:
    return ChatContext(platform, chat, ChatType.GROUP, user, f"name-{user}")


def private(user: str = "1", chat: str | None = None, platform: str = "telegram") -> ChatContext:
    return ChatContext(platform, chat or user, ChatType.PRIVATE, user, f"name-{user}")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "m.db") as opened:
        yield opened


@pytest.fixture
def memories(store: SQLiteStore) -> MemoryStore:
    return MemoryStore(store)


def texts(found: list[Memory]) -> list[str]:
    return [m.text for m in found]


async def test_add_list_delete_respect_scope_and_ownership(memories: MemoryStore) -> None:
    mine = await memories.add(private(), "I like green tea")
    alice = await memories.add(group("1"), "Alice plays the cello")
    bob = await memories.add(group("2"), "Bob is vegetarian", source_turn_id=7)
    rule = await memories.add(group("2"), "This chat meets on Fridays", chat_wide=True)
    assert (mine.scope, alice.scope, rule.scope) == (
        MemoryScope.PRIVATE,
        MemoryScope.MEMBER,
        MemoryScope.CHAT,
    )
    assert texts(await memories.list("telegram:-100")) == [rule.text, bob.text, alice.text]
    assert texts(await memories.list("telegram:-100", "2", limit=1)) == [rule.text]
    assert texts(await memories.list("telegram:1")) == [mine.text]

    assert not await memories.delete(bob.memory_id, chat_key="telegram:-100", user_id="1")
    assert not await memories.delete(bob.memory_id, chat_key="telegram:1", user_id=None)
    assert await memories.delete(bob.memory_id, chat_key="telegram:-100", user_id="2")
    assert await memories.delete(alice.memory_id, chat_key="telegram:-100", user_id=None)
    assert not await memories.delete(alice.memory_id, chat_key="telegram:-100", user_id=None)
    assert texts(await memories.list("telegram:-100")) == [rule.text]
    assert await memories.search("telegram:-100", "vegetarian cello", min_score=0) == []

    for bad in ("", "   ", "x" * 1001):
        with pytest.raises(ValueError):
            await memories.add(private(), bad)


async def test_english_recall(memories: MemoryStore) -> None:
    await memories.add(private(), "I'm allergic to peanuts")
    await memories.add(private(), "My sister lives in Lisbon")
    found = await memories.search("telegram:1", "what am I allergic to?")
    assert texts(found) == ["I'm allergic to peanuts"]
    assert found[0].score >= 1.0
    assert texts(await memories.search("telegram:1", "Peanut butter?")) == [found[0].text]
    assert texts(await memories.search("telegram:1", "where does my sister live")) == [
        "My sister lives in Lisbon"
    ]
    assert await memories.search("telegram:1", "who am I to you?") == []  # stop words only
    assert await memories.search("telegram:1", "weather tomorrow") == []


async def test_chinese_recall(memories: MemoryStore) -> None:
    await memories.add(private(), "我对花生过敏")
    await memories.add(private(), "我妹妹住在上海")
    assert texts(await memories.search("telegram:1", "我对什么过敏？")) == ["我对花生过敏"]
    assert texts(await memories.search("telegram:1", "花生")) == ["我对花生过敏"]
    assert texts(await memories.search("telegram:1", "我妹妹住在哪里")) == ["我妹妹住在上海"]
    assert await memories.search("telegram:1", "今天天气怎么样") == []


async def test_japanese_recall(memories: MemoryStore) -> None:
    await memories.add(private(), "私はピーナッツアレルギーです")
    await memories.add(private(), "猫の名前はミソです")
    assert texts(await memories.search("telegram:1", "私のアレルギーは何？")) == [
        "私はピーナッツアレルギーです"
    ]
    assert texts(await memories.search("telegram:1", "ﾋﾟｰﾅｯﾂ")) == ["私はピーナッツアレルギーです"]
    assert texts(await memories.search("telegram:1", "猫の名前")) == ["猫の名前はミソです"]


def test_search_form_bigrams_cjk_and_keeps_words() -> None:
    assert search_form("我对花生过敏") == "我对 对花 花生 生过 过敏"
    assert search_form("I'm ALLERGIC to 花生!") == "i m allergic to 花生"
    assert search_form("猫 が好き") == "猫 が好 好き"
    assert search_form("Ｃａｆé_bar 2024") == "café bar 2024"
    assert match_query("the AND of") is None
    assert match_query('NEAR( "x" *') == '"near" OR "x"'


HOSTILE = [
    "AND",
    "OR OR",
    '"',
    '"""',
    "*",
    "peanut*",
    "NEAR(",
    "NEAR(a b, 2)",
    "body:x",
    "-x",
    "^x",
    "(",
    ")",
    "{body}: x",
    "'; DROP TABLE memories; --",
    "\x00",
    "",
    "😀",
]


async def test_fts_syntax_in_queries_never_raises(store: SQLiteStore) -> None:
    memories = MemoryStore(store)
    await memories.add(private(), "peanut near body")
    for query in HOSTILE:
        await memories.search("telegram:1", query)
        await memories.search_turns("telegram:1", query, before_turn_id=10)


@given(st.text())
def test_match_query_quotes_every_term(query: str) -> None:
    for term in (match_query(query) or '""').split(" OR "):
        assert term.startswith('"') and term.endswith('"') and '"' not in term[1:-1]


def test_random_queries_never_raise(tmp_path: Path) -> None:
    with asyncio.Runner() as runner:
        store = SQLiteStore(tmp_path / "q.db")
        runner.run(store.open())
        memories = MemoryStore(store)
        runner.run(memories.add(private(), "peanut near body 花生"))

        @settings(max_examples=150, deadline=None)
        @given(st.text())
        def check(query: str) -> None:
            runner.run(memories.search("telegram:1", query, min_score=0))
            runner.run(memories.search_turns("telegram:1", query, before_turn_id=10))

        try:
            check()
        finally:
            runner.run(store.close())


async def test_move_and_clear_chat(store: SQLiteStore, memories: MemoryStore) -> None:
    await memories.add(group("1", "-5"), "the wifi password is on the fridge")
    await memories.add(group("2", "-5"), "Bob brings snacks")
    await memories.add(group("1", "-6"), "another chat's snacks")
    assert await memories.move_chat("telegram:-5", "telegram:-1005") == 2
    assert await memories.search("telegram:-5", "wifi snacks") == []
    assert texts(await memories.search("telegram:-1005", "wifi", min_score=0)) == [
        "the wifi password is on the fridge"
    ]
    assert await memories.clear_chat("telegram:-1005") == 2
    assert await memories.list("telegram:-1005") == []
    assert texts(await memories.search("telegram:-6", "snacks", min_score=0)) == [
        "another chat's snacks"
    ]
    with sqlite3.connect(store.path) as raw:  # the index rows went with them
        assert raw.execute("SELECT count(*) FROM memories_fts WHERE rowid > 0").fetchone() == (1,)


def turn(conv: str, text: str, user: str = "1") -> NewTurn:
    return NewTurn(conv, conv.split(":u:")[0], user, f"name-{user}", text)


async def test_search_turns_recalls_only_this_conversation(store: SQLiteStore) -> None:
    memories = MemoryStore(store)
    mine, other = "telegram:-5:u:1", "telegram:-5:u:2"
    old = await store.begin_turn(turn(mine, "my cat is called Miso"))
    await store.begin_turn(turn(other, "my cat is called Tofu", user="2"))
    for n in range(5):
        await store.begin_turn(turn(mine, f"filler message {n}"))
    current = await store.begin_turn(turn(mine, "what is my cat called?"))

    found = await memories.search_turns(mine, "what is my cat called?", before_turn_id=current)
    assert found == [(old, "name-1", "my cat is called Miso")]
    assert await memories.search_turns(mine, "cat", before_turn_id=old) == []
    assert await memories.search_turns(mine, "我的猫叫什么", before_turn_id=current) == []

    await store.reset(mine, "telegram:-5", "1")  # a /reset is a fresh start for recall too
    assert await memories.search_turns(mine, "cat called", before_turn_id=current + 1) == []

    await store.clear_chat("telegram:-5", "admin", "Admin")  # the trigger empties the index
    with sqlite3.connect(store.path) as raw:
        assert raw.execute("SELECT count(*) FROM turns_fts WHERE rowid > 0").fetchone() == (0,)


async def test_turns_from_before_the_memory_schema_are_indexed(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    with sqlite3.connect(path) as raw:
        for script in MIGRATIONS[:3]:
            raw.executescript(script)
        raw.execute("PRAGMA user_version = 3")
        raw.execute(
            "INSERT INTO turns (conv_key, chat_key, user_id, user_text, status, created_at)"
            " VALUES ('tg:1', 'tg:1', 'u', '我对花生过敏', 'answered', 0)"
        )
    async with SQLiteStore(path) as store:
        memories = MemoryStore(store)
        assert await memories.sync_turns(batch=1) == 1
        assert await memories.sync_turns() == 0
        assert await memories.search_turns("tg:1", "花生", before_turn_id=2) == [
            (1, "", "我对花生过敏")
        ]


async def test_searches_use_the_fts_index_and_primary_keys(store: SQLiteStore) -> None:
    plans = {
        _SEARCH: ('"x"', "k", "u", "telegram:", 1.0, 5),
        _SEARCH_TURNS: ('"x"', 5, "k", 1.0, 5),
    }
    for sql, args in plans.items():
        rows = await store._read.execute_fetchall("EXPLAIN QUERY PLAN " + sql, args)
        details = [str(row[3]) for row in rows]
        scans = [d for d in details if d.startswith("SCAN")]
        assert len(scans) == 1 and "VIRTUAL TABLE INDEX 0:M" in scans[0], details
        assert any("USING INTEGER PRIMARY KEY" in d for d in details), details


def test_migration_statements_keep_trigger_bodies_whole() -> None:
    for script in MIGRATIONS[:3]:  # the steps that shipped split exactly as before
        assert _statements(script) == [s.strip() for s in script.split(";") if s.strip()]
    triggers = [s for s in _statements(MIGRATIONS[3]) if s.startswith("CREATE TRIGGER")]
    assert len(triggers) == 2 and all(t.endswith("END") for t in triggers)
    assert _statements("SELECT 'a;b'; SELECT 2") == ["SELECT 'a;b'", "SELECT 2"]


# -- isolation, as a property ------------------------------------------------------------------

PLATFORMS = ("telegram", "tele", "discord")  # "tele" shares a prefix with "telegram"
WORDS = ("apple", "cherry", "花生", "ピーナッツ")
Note = tuple[str, str, str, bool, list[str]]
note = st.tuples(
    st.sampled_from(PLATFORMS),
    st.sampled_from(("-1", "-2", "dm")),  # group ids; "dm" = a private chat
    st.sampled_from(("1", "2", "3")),
    st.booleans(),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
)


def where(platform: str, chat: str, user: str, chat_wide: bool) -> ChatContext:
    if chat == "dm":  # telegram's private chat id is the user's; others' DM ids are their own
        return private(user, user if platform == "telegram" else f"dm{user}", platform)
    return group(user, chat, platform)


def test_search_never_crosses_chats(tmp_path: Path) -> None:
    askers = [
        (where(platform, chat, user, False), word, share)
        for platform in PLATFORMS
        for chat in ("-1", "-2", "dm")
        for user in ("1", "2", "3")
        for word in WORDS
        for share in (False, True)
    ]
    with asyncio.Runner() as runner:
        store = SQLiteStore(tmp_path / "p.db")
        runner.run(store.open())
        memories = MemoryStore(store)

        async def run(notes: list[Note]) -> None:
            async with store._writing() as conn:
                await conn.execute("DELETE FROM memories")
            added = [
                await memories.add(where(*n[:4]), " ".join(n[4]), chat_wide=n[3]) for n in notes
            ]
            for ctx, word, share in askers:
                shared = (ctx.platform, ctx.user_id) if share else None

                def visible(m: Memory, ctx: ChatContext = ctx, shared: object = shared) -> bool:
                    if m.chat_key == ctx.chat_key:
                        return True
                    return (
                        shared is not None
                        and m.scope is MemoryScope.PRIVATE
                        and m.user_id == ctx.user_id
                        and m.chat_key.startswith(ctx.platform + ":")
                    )

                found = await memories.search(
                    ctx.chat_key, word, limit=100, min_score=0, share_private_of=shared
                )
                for m in found:
                    assert visible(m), (ctx.chat_key, shared, m)
                    if not ctx.is_private and m.scope is MemoryScope.PRIVATE:
                        assert shared == (ctx.platform, m.user_id)
                # and nothing visible is missed: the WHERE clause is not simply empty
                expected = {m.memory_id for m in added if visible(m) and word in m.text.split()}
                assert {m.memory_id for m in found} == expected

        @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(st.lists(note, max_size=12))
        def check(notes: list[Note]) -> None:
            runner.run(run(notes))

        try:
            check()
        finally:
            runner.run(store.close())
