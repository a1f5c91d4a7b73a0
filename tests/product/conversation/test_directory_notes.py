"""The service notes each chat's title in the directory as turns begin: once per change, and
a failing directory never fails the turn."""

from __future__ import annotations

from typing import Any

import pytest

from bot.testing.fake_llm import FakeLLM
from bot.values import ChatEntry
from tests.conftest import AppFactory, group


async def test_a_chat_is_noted_once_per_title_change(
    make_app: AppFactory, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with make_app() as app:
        written: list[ChatEntry] = []
        note = app.store.note_chat

        async def counting(entry: ChatEntry) -> None:
            written.append(entry)
            await note(entry)

        monkeypatch.setattr(app.store, "note_chat", counting)
        for n in range(3):
            await app.service.chat(group("1", "Ann", chat_title="Book Club"), f"hi {n}")
        await app.service.chat(group("2", "Bo", chat_title="Book Club"), "me too")
        await app.service.chat(group("2", "Bo", chat_title="Readers"), "renamed")
        assert written == [
            ChatEntry("telegram", "-100", "group", "Book Club"),
            ChatEntry("telegram", "-100", "group", "Readers"),
        ]
        [chat] = await app.store.list_chats()
        assert (chat.title, chat.turns) == ("Readers", 5)


async def test_a_failing_directory_never_fails_the_turn(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with make_app() as app:

        async def broken(entry: Any) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(app.store, "note_chat", broken)
        reply = await app.service.chat(group("1", "Ann", chat_title="Book Club"), "still there?")
        assert reply.text == "echo: [Ann] still there?"
        assert "chat directory not updated chat=telegram:-100" in caplog.text
        assert [c.title for c in await app.store.list_chats()] == [""]
        monkeypatch.undo()  # the next turn tries again: nothing was remembered as written
        await app.service.chat(group("1", "Ann", chat_title="Book Club"), "and now?")
        assert [c.title for c in await app.store.list_chats()] == ["Book Club"]
