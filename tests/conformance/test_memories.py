"""Memories and their search (bot.storage.memories), through MemoryStore and below it: scopes,
recall in English, Chinese and Japanese, hostile queries, moves and clears, the past-message
index, vectors, and the memory-scope isolation property."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config import EmbeddingSettings, LLMSettings
from bot.context import ChatContext, ChatType, Scope
from bot.llm.embeddings import Embedder
from bot.memory.store import Audience, Memory, MemoryScope, MemoryStore
from bot.storage import Storage
from bot.testing.fake_llm import FakeLLM
from bot.testing.tools import tool_context
from bot.values import NewMemory, NewTurn
from plugins.memory import recall as recall_tool
from tests.conformance.conftest import Backend, answered
from tests.conftest import TEST_KEY


def group(user: str = "1", chat: str = "-100", platform: str = "telegram") -> ChatContext:
    return ChatContext(platform, chat, ChatType.GROUP, user, f"name-{user}")


def private(user: str = "1", chat: str | None = None, platform: str = "telegram") -> ChatContext:
    return ChatContext(platform, chat or user, ChatType.PRIVATE, user, f"name-{user}")


@pytest.fixture
def memories(storage: Storage) -> MemoryStore:
    return MemoryStore(storage)


def chat_of(ctx: ChatContext) -> Audience:
    """Asking in ``ctx``'s chat-scoped conversation (in a private chat: that chat's)."""
    return Audience.of(ctx, ctx.conversation_key(Scope.CHAT))


ME = chat_of(private())


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
    assert await memories.search(chat_of(group()), "vegetarian cello", min_score=0) == []

    for bad in ("", "   ", "x" * 1001):
        with pytest.raises(ValueError):
            await memories.add(private(), bad)


async def test_english_recall(memories: MemoryStore) -> None:
    await memories.add(private(), "I'm allergic to peanuts")
    await memories.add(private(), "My sister lives in Lisbon")
    found = await memories.search(ME, "what am I allergic to?")
    assert texts(found) == ["I'm allergic to peanuts"]
    assert found[0].score >= 1.0
    assert texts(await memories.search(ME, "Peanut butter?")) == [found[0].text]
    assert texts(await memories.search(ME, "where does my sister live")) == [
        "My sister lives in Lisbon"
    ]
    assert await memories.search(ME, "who am I to you?") == []  # stop words only
    assert await memories.search(ME, "weather tomorrow") == []


async def test_equal_scores_come_newest_first(storage: Storage) -> None:
    memories = MemoryStore(storage)
    for _ in range(3):
        await memories.add(private(), "the boat leaves at noon")
    found = await memories.search(ME, "boat noon")
    assert len(found) == 3 and len({m.score for m in found}) == 1
    assert [m.memory_id for m in found] == sorted((m.memory_id for m in found), reverse=True)

    conv = "telegram:-9"
    said = [await storage.begin_turn(turn(conv, "the boat leaves at noon")) for _ in range(3)]
    current = await storage.begin_turn(turn(conv, "when does the boat leave?"))
    hits = await memories.search_turns(conv, "boat noon", before_turn_id=current)
    assert [hit.turn_id for hit in hits] == said[::-1]


async def test_chinese_recall(memories: MemoryStore) -> None:
    await memories.add(private(), "我对花生过敏")
    await memories.add(private(), "我妹妹住在上海")
    assert texts(await memories.search(ME, "我对什么过敏？")) == ["我对花生过敏"]
    assert texts(await memories.search(ME, "花生")) == ["我对花生过敏"]
    assert texts(await memories.search(ME, "我妹妹住在哪里")) == ["我妹妹住在上海"]
    assert await memories.search(ME, "今天天气怎么样") == []


async def test_japanese_recall(memories: MemoryStore) -> None:
    await memories.add(private(), "私はピーナッツアレルギーです")
    await memories.add(private(), "猫の名前はミソです")
    assert texts(await memories.search(ME, "私のアレルギーは何？")) == [
        "私はピーナッツアレルギーです"
    ]
    assert texts(await memories.search(ME, "ﾋﾟｰﾅｯﾂ")) == ["私はピーナッツアレルギーです"]
    assert texts(await memories.search(ME, "猫の名前")) == ["猫の名前はミソです"]


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
    "|",
    "!",
    "&",
    ":*",
    "peanut:*",
    "'",
    "''",
    "\\",
    "a\\'b",
    "<->",
    "peanut <-> body",
    "!peanut & body | near",
]


async def test_query_syntax_in_queries_never_raises(memories: MemoryStore) -> None:
    await memories.add(private(), "peanut near body")
    for query in HOSTILE:
        await memories.search(ME, query)
        await memories.search_turns("telegram:1", query, before_turn_id=10)


async def test_query_syntax_is_searched_for_not_parsed(memories: MemoryStore) -> None:
    await memories.add(private(), "peanut near body")
    await memories.add(private(), "peanuts and butter")
    for query in ("!peanut", "NOT peanut", "-peanut", "peanut & butter", '"peanut body"'):
        assert len(await memories.search(ME, query, min_score=0)) == 2, query  # OR, no NOT
    for query in ("pea*", "pea:*", "pea:* | bod:*", "(pea OR bod)", "\\pea"):
        assert await memories.search(ME, query, min_score=0) == [], query  # no prefix
    assert texts(await memories.search(ME, "body:*", min_score=0)) == ["peanut near body"]


async def test_diacritics_and_widths_fold_as_fts5_does(memories: MemoryStore) -> None:
    await memories.add(private(), "We met at Café Müller in Zürich")
    for query in ("cafe", "MULLER", "ｚｕｒｉｃｈ", "café", "Zurich?"):
        assert texts(await memories.search(ME, query)) == ["We met at Café Müller in Zürich"]


def fts5_bm25(rows: int, tokens: int, hits: int, tf: int, length: int) -> float:
    """FTS5's bm25() of one phrase (fts5_aux.c) over an index of ``rows`` rows of ``tokens``
    tokens in all, with SQLite's 16 background rows of 9 tokens (its migration 4)."""
    n, avgdl = rows + 16, (tokens + 16 * 9) / (rows + 16)
    idf = max(math.log((n - hits + 0.5) / (hits + 0.5)), 1e-6)
    return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avgdl))


async def test_score_is_fts5_bm25(memories: MemoryStore) -> None:
    """``score`` means what it means to SQLite's FTS5 (and so ``min_score``): tokens counted
    with the row's scope tokens (two for a private memory), stems matched, deletes forgotten."""
    await memories.add(private(), "I'm allergic to peanuts")  # 5 tokens + 2
    await memories.add(private(), "My sister lives in Lisbon")  # 5 + 2
    again = await memories.add(private(), "peanut peanuts everywhere")  # 3 + 2
    found = await memories.search(ME, "peanuts", min_score=0)
    assert texts(found) == ["peanut peanuts everywhere", "I'm allergic to peanuts"]
    expected = [fts5_bm25(3, 19, 2, 2, 5), fts5_bm25(3, 19, 2, 1, 7)]
    assert [m.score for m in found] == pytest.approx(expected, rel=1e-9)
    between = (expected[0] + expected[1]) / 2
    assert texts(await memories.search(ME, "peanuts", min_score=between)) == [found[0].text]
    two_phrases = await memories.search(ME, "peanut peanuts", min_score=0)  # one stem, twice
    assert two_phrases[0].score == pytest.approx(2 * expected[0], rel=1e-9)

    await memories.delete(again.memory_id, chat_key="telegram:1", user_id="1")
    [left] = await memories.search(ME, "peanuts", min_score=0)
    assert left.score == pytest.approx(fts5_bm25(2, 14, 1, 1, 7), rel=1e-9)


def test_random_queries_never_raise(backend: Backend) -> None:
    with asyncio.Runner() as runner:
        store = backend.open()
        runner.run(store.open())
        memories = MemoryStore(store)
        runner.run(memories.add(private(), "peanut near body 花生"))

        @settings(max_examples=150, deadline=None)
        @given(st.text())
        def check(query: str) -> None:
            runner.run(memories.search(ME, query, min_score=0))
            runner.run(memories.search_turns("telegram:1", query, before_turn_id=10))

        try:
            check()
        finally:
            runner.run(store.close())


async def test_move_and_clear_chat(memories: MemoryStore) -> None:
    await memories.add(group("1", "-5"), "the wifi password is on the fridge")
    await memories.add(group("2", "-5"), "Bob brings snacks")
    await memories.add(group("1", "-6"), "another chat's snacks")
    assert await memories.move_chat("telegram:-5", "telegram:-1005") == 2
    assert await memories.search(chat_of(group(chat="-5")), "wifi snacks") == []
    assert texts(await memories.search(chat_of(group(chat="-1005")), "wifi", min_score=0)) == [
        "the wifi password is on the fridge"
    ]
    assert await memories.clear_chat("telegram:-1005") == 2
    assert await memories.list("telegram:-1005") == []
    assert texts(await memories.search(chat_of(group(chat="-6")), "snacks", min_score=0)) == [
        "another chat's snacks"
    ]
    assert await memories.search(chat_of(group(chat="-1005")), "wifi", min_score=0) == []


def turn(conv: str, text: str, user: str = "1") -> NewTurn:
    return NewTurn(conv, conv.split(":u:")[0], user, f"name-{user}", text)


async def test_search_turns_recalls_only_this_conversation(storage: Storage) -> None:
    store, memories = storage, MemoryStore(storage)
    mine, other = "telegram:-5:u:1", "telegram:-5:u:2"
    old = await store.begin_turn(turn(mine, "my cat is called Miso"))
    await store.begin_turn(turn(other, "my cat is called Tofu", user="2"))
    for n in range(5):
        await store.begin_turn(turn(mine, f"filler message {n}"))
    current = await store.begin_turn(turn(mine, "what is my cat called?"))

    before = time.time()
    found = await memories.search_turns(mine, "what is my cat called?", before_turn_id=current)
    [hit] = found
    assert (hit.turn_id, hit.user_id, hit.user_name, hit.text) == (
        old,
        "1",
        "name-1",
        "my cat is called Miso",
    )
    assert before - 60 < hit.created_at <= before and hit.score >= 1.0  # when it was said
    assert await memories.search_turns(mine, "cat", before_turn_id=old) == []
    assert await memories.search_turns(mine, "我的猫叫什么", before_turn_id=current) == []

    await store.reset(mine, "telegram:-5", "1")  # a /reset is a fresh start for recall too
    assert await memories.search_turns(mine, "cat called", before_turn_id=current + 1) == []

    await answered(store, mine, "my cat is called Miso again", "noted", chat="telegram:-5")
    later = await store.begin_turn(turn(mine, "and now?"))
    assert len(await memories.search_turns(mine, "cat", before_turn_id=later)) == 1
    await store.clear_chat("telegram:-5", "admin", "Admin")  # the index forgets them too
    assert await memories.search_turns(mine, "cat", before_turn_id=later + 1) == []


async def test_turns_beside_are_the_conversations_own_neighbours(storage: Storage) -> None:
    store, memories = storage, MemoryStore(storage)
    mine, other = "telegram:-7", "telegram:-8"
    first = await store.begin_turn(turn(mine, "what did you do on Sunday?"))
    await store.begin_turn(turn(other, "elsewhere", user="2"))  # ids interleave
    answer = await store.begin_turn(turn(mine, "I painted a sunrise by the lake", user="2"))
    last = await store.begin_turn(turn(mine, "lovely"))
    current = await store.begin_turn(turn(mine, "what did I paint?"))

    beside = await memories.turns_beside(mine, [first, answer], before_turn_id=current)
    assert {k: [(t.turn_id, t.text) for t in v] for k, v in beside.items()} == {
        first: [(answer, "I painted a sunrise by the lake")],  # after it; nothing before
        answer: [(last, "lovely"), (first, "what did you do on Sunday?")],  # after, then before
    }
    [after] = beside[first]
    assert (after.user_id, after.user_name, after.score) == ("2", "name-2", 0.0)
    # what the prompt holds already (from before_turn_id on) is not brought again
    held = await memories.turns_beside(mine, [answer], before_turn_id=last)
    assert [t.turn_id for t in held[answer]] == [first]
    # another conversation's turn, an id of no turn, one no database holds: nothing
    assert await memories.turns_beside(other, [first], before_turn_id=current) == {}
    assert await memories.turns_beside(mine, [current + 99, 2**70], before_turn_id=current) == {}
    await store.reset(mine, "telegram:-7", "1")  # nothing from before a /reset
    assert await memories.turns_beside(mine, [answer], before_turn_id=current + 1) == {}


# -- isolation, as a property ------------------------------------------------------------------

PLATFORMS = ("telegram", "tele", "discord")  # "tele" shares a prefix with "telegram"
WORDS = ("apple", "cherry", "花生", "ピーナッツ")
THREADS = (None, "t1", "t2")
# Where something is said: platform, chat ("dm" = a private chat), user, thread, the chat's
# scope at the time, and (notes only) whether it is about the whole group.
Place = tuple[str, str, str, str | None, Scope]
Note = tuple[str, str, str, str | None, Scope, bool, list[str]]
_platform = st.sampled_from(PLATFORMS)
_chat = st.sampled_from(("-1", "-2", "dm"))
_user = st.sampled_from(("1", "2", "3"))
_thread = st.sampled_from(THREADS)
_scope = st.sampled_from(tuple(Scope))
place = st.tuples(_platform, _chat, _user, _thread, _scope)
note = st.tuples(
    _platform,
    _chat,
    _user,
    _thread,
    _scope,
    st.booleans(),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
)
asker = st.tuples(place, st.sampled_from(WORDS), st.booleans())
MIGRATED = ("telegram:-1", "telegram:-1001")  # a group upgraded to a supergroup


def where(platform: str, chat: str, user: str, thread: str | None = None) -> ChatContext:
    if chat == "dm":  # telegram's private chat id is the user's; others' DM ids are their own
        return private(user, user if platform == "telegram" else f"dm{user}", platform)
    return ChatContext(platform, chat, ChatType.GROUP, user, f"name-{user}", thread_id=thread)


def said(n: Note) -> tuple[ChatContext, str]:
    ctx = where(*n[:4])
    return ctx, ctx.conversation_key(n[4])


def may_recall(m: Memory, ctx: ChatContext, conversation: str, share: bool) -> bool:
    """The rule of the issue, written out independently of bot.memory.scope."""
    if m.conversation_key == conversation:
        return True  # said in this very conversation
    if m.user_id != ctx.user_id:
        return False  # someone else's, from another conversation: never
    if m.scope is MemoryScope.MEMBER:
        return m.chat_key == ctx.chat_key  # my own facts, in the same group
    return (
        share
        and not ctx.is_private
        and m.scope is MemoryScope.PRIVATE
        and m.chat_key.startswith(ctx.platform + ":")
    )


def rekeyed(m: Memory, migrated: bool) -> Memory:
    old, new = MIGRATED
    if not migrated or m.chat_key != old:
        return m
    return dataclasses.replace(
        m, chat_key=new, conversation_key=new + m.conversation_key[len(old) :]
    )


def asked(a: tuple[Place, str, bool], migrated: bool) -> tuple[ChatContext, str, str, bool]:
    (platform, chat, user, thread, scope), word, share = a
    if migrated and (platform, chat) == ("telegram", "-1"):
        chat = "-1001"
    ctx = where(platform, chat, user, thread)
    return ctx, ctx.conversation_key(scope), word, share


async def check_isolation(
    store: Storage,
    memories: MemoryStore,
    notes: list[Note],
    askers: list[tuple[Place, str, bool]],
    migrated: bool,
    *,
    exact: bool = True,
) -> None:
    """Add ``notes`` as said, maybe migrate a chat, then every asker recalls (the store's
    search and the ``recall`` tool) exactly what the rule admits, never more."""
    added: list[Memory] = []
    try:
        await _check(store, memories, notes, askers, migrated, exact, added)
    finally:  # the next example starts empty
        for m in added:
            for chat in {m.chat_key, rekeyed(m, migrated=True).chat_key}:
                await store.delete_memory(m.memory_id, chat_key=chat, user_id=None)


async def _check(
    store: Storage,
    memories: MemoryStore,
    notes: list[Note],
    askers: list[tuple[Place, str, bool]],
    migrated: bool,
    exact: bool,
    added: list[Memory],
) -> None:
    for n in notes:
        ctx, key = said(n)
        added.append(await memories.add(ctx, " ".join(n[6]), conversation_key=key, chat_wide=n[5]))
    if migrated:
        await store.migrate_chat(*MIGRATED)
    moved = [rekeyed(m, migrated) for m in added]
    for ask in askers:
        ctx, key, word, share = asked(ask, migrated)
        memories.share_private = share
        found = await memories.search(memories.audience(ctx, key), word, limit=100, min_score=0)
        for m in found:
            assert may_recall(m, ctx, key, share), (ctx, key, share, m)
            if ":u:" in key:  # a private chat or a user-scoped conversation: only my own
                assert m.user_id == ctx.user_id, (key, m)
        visible = {m.memory_id for m in moved if may_recall(m, ctx, key, share)}
        expected = {m.memory_id for m in moved if m.memory_id in visible and word in m.text.split()}
        got = {m.memory_id for m in found}
        if exact:
            assert got == expected, (ctx, key, share)
        else:
            assert expected <= got <= visible, (ctx, key, share)
        tool = tool_context("memory", chat=ctx, conversation_key=key, memories=memories)
        listed = await recall_tool(tool, word)
        ids = {int(line.split()[0][1:]) for line in listed.splitlines() if line.startswith("#")}
        assert ids <= visible, (ctx, key, listed)


def test_search_never_crosses_scopes(backend: Backend) -> None:
    """The memory-scope property: whatever is said where, and whatever migrates, a search
    returns exactly what ``may_recall`` admits."""
    with asyncio.Runner() as runner:
        store = backend.open()
        runner.run(store.open())
        memories = MemoryStore(store)

        @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(st.lists(note, max_size=12), st.lists(asker, min_size=1, max_size=25), st.booleans())
        def check(notes: list[Note], askers: list[tuple[Place, str, bool]], migrated: bool) -> None:
            runner.run(check_isolation(store, memories, notes, askers, migrated))

        try:
            check()
        finally:
            runner.run(store.close())


# -- isolation, as a property, with vectors ----------------------------------------------------

EMBEDDING_MODEL = "text-embedding-3-small"


class CachedEmbedder(Embedder):
    """The real Embedder, memoised: the property asks the same few queries thousands of times."""

    cache: dict[str, list[float]]

    async def embed(self, texts: list[str], **kw: Any) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, await super().embed(missing, **kw), strict=True))
        return [self.cache[t] for t in texts]


def test_search_with_embeddings_never_crosses_scopes(backend: Backend) -> None:
    """The isolation property above, with vectors: fusion may add paraphrases (min_similarity
    0: any positive cosine is a candidate), never a memory the rule keeps out."""
    with asyncio.Runner() as runner:
        fake = FakeLLM()
        runner.run(fake.start())
        store = backend.open()
        runner.run(store.open())
        llm = LLMSettings(base_url=fake.base_url, api_key=TEST_KEY)
        embedder = CachedEmbedder(EmbeddingSettings(model=EMBEDDING_MODEL, min_similarity=0.0), llm)
        embedder.cache = {}
        memories = MemoryStore(store, embedder)
        paraphrased = st.tuples(
            place, st.sampled_from((*WORDS, "apples", "cherries")), st.booleans()
        )

        @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(
            st.lists(note, max_size=10),
            st.lists(paraphrased, min_size=1, max_size=15),
            st.booleans(),
        )
        def check(notes: list[Note], askers: list[Any], migrated: bool) -> None:
            runner.run(check_isolation(store, memories, notes, askers, migrated, exact=False))

        try:
            check()
        finally:
            runner.run(store.close())
            runner.run(embedder.close())
            runner.run(fake.stop())


# -- records, the past-message index and vectors, below MemoryStore ----------------------------


async def test_memories_are_stored_whole_and_deleted_with_their_index(storage: Storage) -> None:
    memory = NewMemory("tg:-1", "tg:-1", "7", "Ann", MemoryScope.MEMBER, "Ann plays the oboe", 3)
    stored = await storage.add_memory(memory, [1.0, 0.0], "m1")
    assert (stored.chat_key, stored.conversation_key, stored.user_id, stored.user_name) == (
        "tg:-1",
        "tg:-1",
        "7",
        "Ann",
    )
    assert (stored.scope, stored.text, stored.score) == (MemoryScope.MEMBER, memory.text, 0.0)
    audience = Audience("tg:-1", "tg:-1", "8")
    [found] = await storage.search_memories(audience, "oboe", limit=5, min_score=0)
    assert found.memory_id == stored.memory_id and found.score > 0
    [(with_vector, vector)] = await storage.memory_vectors(audience, "m1", 2, 10)
    assert with_vector.memory_id == stored.memory_id and list(vector) == [1.0, 0.0]
    other = await storage.add_memory(
        dataclasses.replace(memory, text="and the flute"), [0.0, 1.0], "m1"
    )
    assert await storage.delete_memory(other.memory_id, chat_key="tg:-1", user_id="7")
    assert len(await storage.memory_vectors(audience, "m1", 2, 10)) == 1  # its vector went along
    assert await storage.clear_memories("tg:-1") == 1
    assert await storage.search_memories(audience, "oboe", limit=5, min_score=0) == []
    assert await storage.memory_vectors(audience, "m1", 2, 10) == []
    assert await storage.unembedded("m1", 0, 10) == []


async def test_a_nul_in_a_memory_is_stored_as_u_fffd_on_every_backend(storage: Storage) -> None:
    memory = NewMemory("tg:-1", "tg:-1", "7", "A\x00nn", MemoryScope.MEMBER, "likes\x00oboe\x00")
    stored = await storage.add_memory(memory, [1.0, 0.0], "m1")
    assert (stored.text, stored.user_name) == ("likes\ufffdoboe\ufffd", "A\ufffdnn")
    [listed] = await storage.list_memories("tg:-1")
    assert (listed.memory_id, listed.text, listed.user_name) == (
        stored.memory_id,
        "likes\ufffdoboe\ufffd",
        "A\ufffdnn",
    )
    audience = Audience("tg:-1", "tg:-1", "7")
    [found] = await storage.search_memories(audience, "oboe", limit=5, min_score=0)
    assert found.text == "likes\ufffdoboe\ufffd"
    assert await storage.unembedded("m2", 0, 10) == [(stored.memory_id, "likes\ufffdoboe\ufffd")]


async def test_deleting_a_memory_id_no_database_can_hold_is_not_found(storage: Storage) -> None:
    kept = await storage.add_memory(
        NewMemory("tg:-1", "tg:-1", "7", "Ann", MemoryScope.MEMBER, "Ann plays the oboe")
    )
    for memory_id in (10**23, 2**63, -(2**63) - 1):
        assert not await storage.delete_memory(memory_id, chat_key="tg:-1", user_id=None)
    assert not await storage.delete_memory(2**63 - 1, chat_key="tg:-1", user_id=None)
    assert [m.memory_id for m in await storage.list_memories("tg:-1")] == [kept.memory_id]


async def test_vectors_of_another_model_or_size_never_join(storage: Storage) -> None:
    audience = Audience("tg:1", "tg:1", "1")
    a = await storage.add_memory(NewMemory("tg:1", "tg:1", "1", "A", MemoryScope.PRIVATE, "one"))
    b = await storage.add_memory(NewMemory("tg:1", "tg:1", "1", "A", MemoryScope.PRIVATE, "two"))
    assert await storage.unembedded("m1", 0, 10) == [(a.memory_id, "one"), (b.memory_id, "two")]
    assert await storage.unembedded("m1", a.memory_id, 10) == [(b.memory_id, "two")]
    await storage.put_vectors("m1", [(a.memory_id, [0.6, 0.8]), (10**9, [1.0, 0.0])])
    await storage.put_vectors("m2", [(b.memory_id, [1.0, 0.0, 0.0])])
    assert await storage.unembedded("m1", 0, 10) == [(b.memory_id, "two")]
    found = await storage.memory_vectors(audience, "m1", 2, 10)
    assert [(m.memory_id, [round(x, 5) for x in v]) for m, v in found] == [
        (a.memory_id, [0.6, 0.8])
    ]
    assert await storage.memory_vectors(audience, "m1", 3, 10) == []
    await storage.put_vectors("m2", [(a.memory_id, [0.0, 1.0, 0.0])])  # replaces
    assert await storage.memory_vectors(audience, "m1", 2, 10) == []
    newest_first = await storage.memory_vectors(audience, "m2", 3, 10)
    assert [m.memory_id for m, _ in newest_first] == [b.memory_id, a.memory_id]
    assert len(await storage.memory_vectors(audience, "m2", 3, 1)) == 1


async def test_the_past_message_index_catches_up_once(storage: Storage) -> None:
    first = await storage.begin_turn(turn("tg:1", "我对花生过敏"))
    assert await storage.index_turns(batch=1) >= 0
    assert await storage.index_turns() == 0
    later = await storage.begin_turn(turn("tg:1", "peanuts again?"))
    found = await storage.search_turns("tg:1", "花生", before_turn_id=later, limit=5, min_score=0)
    assert [(t.turn_id, t.user_name, t.text) for t in found] == [(first, "name-1", "我对花生过敏")]
    await storage.begin_turn(turn("tg:1", "one more"))
    results = await asyncio.gather(*(storage.index_turns() for _ in range(3)))
    assert sorted(results) == [0, 0, 1]  # indexed once, whoever gets there first


async def test_the_past_message_index_is_shared_by_processes(backend: Backend) -> None:
    """Two stores on one database (two processes) index at once: every turn exactly once, and
    a search in one sees the turns the other stored just before."""
    async with backend.open() as one, backend.open() as two:
        for n in range(30):
            await one.begin_turn(turn("tg:1", f"apple number {n}"))
        done = await asyncio.gather(
            one.index_turns(batch=7), two.index_turns(batch=7), one.index_turns(batch=5)
        )
        assert sum(done) == 30
        assert (await one.index_turns(), await two.index_turns()) == (0, 0)
        later = await two.begin_turn(turn("tg:1", "and a pear"))
        found = await one.search_turns(
            "tg:1", "pear apple", before_turn_id=later + 1, limit=50, min_score=0
        )
        assert (found[0].turn_id, found[0].text) == (later, "and a pear") and len(found) == 31


# -- vectors of past messages ------------------------------------------------------------------


async def test_turn_vectors_follow_their_conversation_and_go_with_their_turns(
    storage: Storage,
) -> None:
    conv, other = "tg:-7", "tg:-8"
    first = await storage.begin_turn(turn(conv, "we sail at dawn"))
    second = await storage.begin_turn(turn(conv, "bring a coat", user="2"))
    elsewhere = await answered(storage, other, "another chat", "ok", chat=other)
    assert await storage.unembedded_turns(conv, "m1", after_turn_id=0, limit=10) == [
        (second, "bring a coat"),
        (first, "we sail at dawn"),
    ]  # newest first: recall reaches them first
    assert await storage.unembedded_turns(conv, "m1", after_turn_id=first, limit=10) == [
        (second, "bring a coat")
    ]
    await storage.put_turn_vectors(
        "m1", [(first, [0.6, 0.8]), (second, [1.0, 0.0]), (10**9, [1.0, 0.0])]
    )
    await storage.put_turn_vectors("m1", [(elsewhere, [1.0, 0.0])])
    assert await storage.unembedded_turns(conv, "m1", after_turn_id=0, limit=10) == []
    assert await storage.unembedded_turns(conv, "m2", after_turn_id=0, limit=1) == [
        (second, "bring a coat")
    ]

    found = await storage.turn_vectors(conv, "m1", 2, before_turn_id=second + 1, limit=10)
    assert [(t.turn_id, t.user_id, t.text, [round(x, 5) for x in v]) for t, v in found] == [
        (second, "2", "bring a coat", [1.0, 0.0]),
        (first, "1", "we sail at dawn", [0.6, 0.8]),
    ]
    assert found[0][0].created_at >= found[1][0].created_at > 0
    assert len(await storage.turn_vectors(conv, "m1", 2, before_turn_id=second + 1, limit=1)) == 1
    below = await storage.turn_vectors(conv, "m1", 2, before_turn_id=second, limit=10)
    assert [t.turn_id for t, _ in below] == [first]  # only what left the prompt
    assert await storage.turn_vectors(conv, "m1", 3, before_turn_id=10**9, limit=10) == []
    assert await storage.turn_vectors(conv, "m2", 2, before_turn_id=10**9, limit=10) == []
    await storage.put_turn_vectors("m2", [(first, [0.0, 1.0, 0.0])])  # replaces
    assert [t.turn_id for t, _ in await storage.turn_vectors(
        conv, "m1", 2, before_turn_id=10**9, limit=10
    )] == [second]  # fmt: skip

    await storage.reset(conv, conv, "1")  # a fresh start: recall no longer reaches them
    assert await storage.turn_vectors(conv, "m1", 2, before_turn_id=10**9, limit=10) == []
    assert await storage.unembedded_turns(conv, "m1", after_turn_id=0, limit=10) == []
    after = await storage.begin_turn(turn(conv, "a new voyage"))
    assert await storage.unembedded_turns(conv, "m1", after_turn_id=0, limit=10) == [
        (after, "a new voyage")
    ]

    await storage.put_turn_vectors("m1", [(after, [1.0, 0.0])])
    await storage.clear_chat(conv, "admin", "Admin")  # the vectors go with the turns
    survivors = await storage.turn_vectors(other, "m1", 2, before_turn_id=10**9, limit=10)
    assert [t.turn_id for t, _ in survivors] == [elsewhere]
    await storage.put_turn_vectors("m1", [(after, [1.0, 0.0])])  # a deleted turn gets none
    assert await storage.delete_older_than(-1) == 1  # retention takes them too (answered ones)
    assert await storage.turn_vectors(other, "m1", 2, before_turn_id=10**9, limit=10) == []
