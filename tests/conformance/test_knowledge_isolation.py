"""The knowledge isolation property, on every backend: whatever bases config declares, however
``chats:`` presets and in-chat bindings place them, a chat's prompt carries passages of exactly
the bases bound to it (preset or binding, still declared), never another chat's, and a base bound
nowhere is never searched. Driven through the conversation's own :class:`Knowledge`, as a turn
reads it, over the real store."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config import settings_from_mapping
from bot.context import ChatContext, ChatType
from bot.conversation.knowledge import Knowledge
from bot.conversation.presets import ChatPresets
from bot.guardrails.admins import AdminPolicy
from bot.llm.tokens import TokenCounter
from bot.storage import Storage
from bot.storage.knowledge import NewChunk, NewDocument
from tests.conformance.conftest import Backend

BASES = ("rules", "faq", "staff")
CHATS = (
    ChatContext("telegram", "-100", ChatType.GROUP, "7", "Ann"),
    ChatContext("telegram", "-200", ChatType.GROUP, "7", "Ann"),
    ChatContext("telegram", "7", ChatType.PRIVATE, "7", "Ann"),
    ChatContext("discord", "55", ChatType.GROUP, "8", "Bo"),
    ChatContext("discord", "56", ChatType.PRIVATE, "8", "Bo"),
)
QUERY = " ".join(f"marker{base}" for base in BASES)

chat_index = st.integers(0, len(CHATS) - 1)
base = st.sampled_from(BASES)


async def stock(store: Storage) -> None:
    """One document per base, its chunks naming their base's marker word."""
    for name in BASES:
        chunks = tuple(
            NewChunk(i, (name.title(),), f"marker{name} passage {i} of the {name} base", 8)
            for i in range(3)
        )
        await store.put_document(NewDocument(name, f"{name}.md", f"sha256:{name}", "markdown",
                                             "test", chunks))  # fmt: skip


async def check_isolation(
    store: Storage,
    declared: frozenset[str],
    presets: list[tuple[int, list[str]]],
    bindings: list[tuple[int, str]],
) -> None:
    for ctx in CHATS:
        for bound in await store.bound_bases(ctx.chat_key):
            await store.unbind_base(ctx.chat_key, bound)
    for index, name in bindings:
        await store.bind_base(CHATS[index].chat_key, name, "admin")
    config: dict[str, Any] = {
        "knowledge": {"bases": {name: {} for name in sorted(declared)}},
        "chats": [
            {"match": _pattern(CHATS[index]), "knowledge": [n for n in names if n in declared]}
            for index, names in presets
        ],
    }
    settings_ = settings_from_mapping(config)
    presets_ = ChatPresets(settings_)
    knowledge = Knowledge(
        settings_, store, presets_, AdminPolicy(settings_), TokenCounter("gpt-4o-mini")
    )
    for ctx in CHATS:
        matched = presets_.match(ctx)
        expected = set(matched.knowledge if matched else ())
        expected |= {name for i, name in bindings if CHATS[i].chat_key == ctx.chat_key}
        expected &= declared
        turn = await knowledge.turn(ctx)
        assert set(turn.bases) == expected, (ctx.chat_key, config, bindings)
        if not expected:
            assert await turn.before_call(QUERY) == []
            continue
        block = await turn.before_call(QUERY)
        seen = {
            json.loads(line)[1].split(".md", 1)[0]
            for message in block
            for line in str(message["content"]).split("\n")[1:]
        }
        assert seen == expected, (ctx.chat_key, config, bindings)
        tool = await turn.search(QUERY)
        for other in set(BASES) - expected:
            assert f"marker{other}" not in tool, (ctx.chat_key, other)


def _pattern(ctx: ChatContext) -> str:
    return f"{ctx.platform}:{ctx.chat_id}"


def test_a_chat_sees_exactly_its_bound_bases(backend: Backend) -> None:
    with asyncio.Runner() as runner:
        store = backend.open()
        runner.run(store.open())
        runner.run(stock(store))

        @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(
            st.frozensets(base),
            st.lists(st.tuples(chat_index, st.lists(base, max_size=3)), max_size=4),
            st.lists(st.tuples(chat_index, base), max_size=6),
        )
        def check(
            declared: frozenset[str],
            presets: list[tuple[int, list[str]]],
            bindings: list[tuple[int, str]],
        ) -> None:
            runner.run(check_isolation(store, declared, presets, bindings))

        try:
            check()
        finally:
            runner.run(store.close())
