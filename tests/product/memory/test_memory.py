"""Long-term memory in the prompt: old messages recalled after trimming, remembered facts, their
scopes, the token cap, and what /clear and a chat migration do to them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.prompt.safety import RECALLED_HEADER
from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.conftest import AppFactory, group, private
from tests.product.app.test_cli import SECRET, env_for, run_cli, write_config

SMALL = {"history": {"max_turns": 10, "max_tokens": 400}}
MEMORY = {"plugins": ["plugins.memory"]}
FILLER = ["the weather", "a recipe for bread", "train times", "a good book", "football scores"]


def system_text(fake: FakeLLM, index: int = -1) -> str:
    body: dict[str, Any] = fake.chat_requests[index].json
    return "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "system")


def recalled_blocks(fake: FakeLLM, index: int = -1) -> list[str]:
    """Every recalled block of a request, oldest first: user-role messages of quoted items,
    never a system message. Earlier turns' blocks come back with them in the history."""
    body: dict[str, Any] = fake.chat_requests[index].json
    assert "Recalled from memory" not in system_text(fake, index)
    return [
        str(m["content"])
        for m in body["messages"]
        if m["role"] == "user" and str(m["content"]).startswith(RECALLED_HEADER)
    ]


def recalled_text(fake: FakeLLM, index: int = -1) -> str:
    """The recalled block this request's own recall brought (it comes last of them)."""
    messages: list[dict[str, Any]] = fake.chat_requests[index].json["messages"]
    blocks = recalled_blocks(fake, index)
    if not blocks or str(messages[-2]["content"]) != blocks[-1]:
        return ""
    return blocks[-1]


async def test_an_old_fact_is_recalled_after_trimming(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(**SMALL) as app:
        await app.service.chat(private(), "my name is Mei and I'm allergic to peanuts")
        for n in range(100):
            await app.service.chat(private(), f"tell me about {FILLER[n % 5]} number {n}")
        await app.service.chat(private(), "what am I allergic to?")
    recalled = recalled_text(fake_llm)
    assert "allergic to peanuts" in recalled
    window = [m for m in fake_llm.chat_requests[-1].json["messages"] if m["role"] == "user"]
    history = [m for m in window if not m["content"].startswith(RECALLED_HEADER)]
    assert all("peanuts" not in m["content"] for m in history)  # it came from memory


async def test_chinese_is_recalled_too(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with make_app(**SMALL) as app:
        await app.service.chat(private(), "我叫小梅，我对花生过敏")
        for n in range(30):
            await app.service.chat(private(), f"今天的天气怎么样 {n}")
        await app.service.chat(private(), "我对什么过敏？")
    assert "花生" in recalled_text(fake_llm)


async def test_remembered_facts_stay_in_their_chat(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with make_app(**MEMORY) as app:
        fake_llm.script(
            tool_calls(("remember", {"fact": "Mei is allergic to peanuts"})), reply("Noted.")
        )
        await app.service.chat(private("7", "Mei"), "remember that I'm allergic to peanuts")
        await app.service.chat(private("7", "Mei"), "am I allergic to peanuts?")
        assert "Mei is allergic to peanuts" in recalled_text(fake_llm)
        await app.service.chat(group("7", "Mei"), "am I allergic to peanuts?")
        assert "peanuts" not in recalled_text(fake_llm)  # a private chat's memory stays there
        await app.service.chat(group("8", "Bo", chat="-200"), "is anyone allergic to peanuts?")
        assert "peanuts" not in recalled_text(fake_llm)


async def test_shared_private_memories_need_the_opt_in(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with make_app(**MEMORY, memory={"share_private": True}) as app:
        assert app.memories is not None
        await app.memories.add(private("7", "Mei"), "Mei is allergic to peanuts")
        await app.service.chat(group("7", "Mei"), "what am I allergic to? peanuts?")
        assert "Mei is allergic to peanuts" in recalled_text(fake_llm)
        await app.service.chat(group("8", "Bo"), "what is Mei allergic to? peanuts?")
        assert "peanuts" not in recalled_text(fake_llm)  # only for the user themselves
        # ... and not kept with Mei's turn either: it never comes back in the group's history
        earlier = fake_llm.chat_requests[-1].json["messages"][:-1]
        assert all("Mei is allergic" not in str(m["content"]) for m in earlier)
        await app.service.chat(group("7", "Mei"), "and what else? peanuts?")
        mine = [str(m["content"]) for m in fake_llm.chat_requests[-1].json["messages"]]
        assert sum("Mei is allergic to peanuts" in m for m in mine) == 1  # sent again, once


async def test_memory_command_lists_and_deletes_own(make_app: AppFactory) -> None:
    async with make_app(**MEMORY) as app:
        assert app.memories is not None
        mine = await app.memories.add(group("1", "Alice"), "Alice likes green tea")
        theirs = await app.memories.add(group("2", "Bob"), "Bob plays the cello")
        listed = (await app.commands.handle(group("1", "Alice"), "memory")).text
        assert "green tea" in listed and "cello" not in listed
        refused = await app.commands.handle(
            group("1", "Alice"), "memory", f"delete {theirs.memory_id}"
        )
        assert not refused.ok
        done = await app.commands.handle(group("1", "Alice"), "memory", f"delete {mine.memory_id}")
        assert done.ok
        admin_list = (await app.commands.handle(group("9", is_admin=True), "memory")).text
        assert "cello" in admin_list and "green tea" not in admin_list


async def test_recalled_block_is_capped(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with make_app(**MEMORY, memory={"max_tokens": 40, "top_k": 10}) as app:
        assert app.memories is not None
        for n in range(10):
            await app.memories.add(private(), f"fact {n}: the garden has {n} roses and tulips")
        await app.service.chat(private(), "how many roses and tulips are in the garden?")
    block = recalled_text(fake_llm).split(RECALLED_HEADER, 1)[1]
    assert 1 <= block.count("\n[") < 10
    assert app.service.counter.count_text(block) <= 60


async def test_clear_and_migration_take_memories_along(make_app: AppFactory) -> None:
    async with make_app(**MEMORY) as app:
        assert app.memories is not None
        await app.memories.add(group(chat="-5"), "the blue door")
        await app.service.migrate_chat("telegram:-5", "telegram:-1005")
        assert [m.text for m in await app.memories.list("telegram:-1005")] == ["the blue door"]
        await app.service.clear(group(chat="-1005", is_admin=True))
        assert await app.memories.list("telegram:-1005") == []


@pytest.mark.slow
async def test_console_remembers_mei(fake_llm: FakeLLM, tmp_path: Path) -> None:
    """The issue's "done when", through the console as a user runs it."""
    write_config(tmp_path, "history:\n  max_turns: 10\n  max_tokens: 400\n")
    env = env_for(tmp_path, OPENAI_BASE_URL=fake_llm.base_url, OPENAI_API_KEY=SECRET)
    lines = ["my name is Mei and I'm allergic to peanuts"]
    lines += [f"tell me about {FILLER[n % 5]} number {n}" for n in range(100)]
    lines.append("what am I allergic to?")
    code, _out, err = await run_cli("chat", env=env, stdin="\n".join(lines) + "\n")
    assert code == 0, err
    assert len(fake_llm.chat_requests) == 102
    assert "allergic to peanuts" in recalled_text(fake_llm)
