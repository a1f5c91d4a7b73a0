"""The memory tools with what a database cannot hold: a NUL in a fact is stored as U+FFFD, an id
past signed 64-bit is no such memory, and no driver's text reaches the model (which would repeat
it in the chat). On SQLite and PostgreSQL, whatever ``PARLOUR_TEST_STORAGE`` says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.conftest import AppFactory, private
from tests.postgres_support import BACKEND_NAMES, storage_section

MEMORY = {"plugins": ["plugins.memory"]}
MEI = private("7", "Mei")
DRIVER_WORDS = ("CharacterNotInRepertoire", "0x00", "byte sequence", "int64", "Overflow")


@pytest.fixture(params=BACKEND_NAMES)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return storage_section(request.param, tmp_path)


def tool_messages(fake: FakeLLM) -> list[str]:
    """The tool messages the model was sent in the newest request."""
    body: dict[str, Any] = fake.chat_requests[-1].json
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


async def test_a_fact_with_a_nul_is_remembered_with_u_fffd_and_no_driver_text(
    make_app: AppFactory, fake_llm: FakeLLM, storage: dict[str, str]
) -> None:
    fake_llm.script(
        tool_calls(("remember", {"fact": "Mei's code word is tea\x00pot"})), reply("Noted.")
    )
    async with make_app(storage=storage, **MEMORY) as app:
        answer = await app.service.chat(MEI, "remember my code word")
        [stored] = await app.store.list_memories(MEI.chat_key)
    assert answer.text == "Noted."
    assert stored.text == "Mei's code word is tea\ufffdpot"
    [told] = tool_messages(fake_llm)
    assert told == f"Remembered (#{stored.memory_id}): Mei's code word is tea\ufffdpot"
    assert not any(word in str(fake_llm.chat_requests[-1].json) for word in DRIVER_WORDS)


async def test_forgetting_an_id_past_int64_is_no_such_memory_not_a_driver_error(
    make_app: AppFactory, fake_llm: FakeLLM, storage: dict[str, str]
) -> None:
    huge = 10**23
    fake_llm.script(tool_calls(("forget", {"memory_id": huge})), reply("There is none."))
    async with make_app(storage=storage, **MEMORY) as app:
        assert app.memories is not None
        await app.memories.add(MEI, "Mei likes green tea")
        answer = await app.service.chat(MEI, "forget memory 10^23")
        typed = await app.commands.handle(MEI, "memory", f"delete {huge}")
        assert len(await app.store.list_memories(MEI.chat_key)) == 1
    assert answer.text == "There is none."
    assert tool_messages(fake_llm) == [f"Error: no memory #{huge} that this user may delete here."]
    assert (typed.text, typed.ok) == (f"No memory #{huge} you may delete here.", False)
    assert not any(word in str(fake_llm.chat_requests[-1].json) for word in DRIVER_WORDS)


async def test_a_blank_fact_is_refused_in_words_the_model_can_act_on(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(tool_calls(("remember", {"fact": "   "})), reply("Nothing to keep."))
    async with make_app(**MEMORY) as app:
        await app.service.chat(MEI, "remember nothing")
        assert await app.store.list_memories(MEI.chat_key) == []
    assert tool_messages(fake_llm) == [
        "Error: the fact is blank; nothing was remembered. Call remember with its text."
    ]
