"""The bot's own cap on one reply: a server that ignores ``max_tokens`` cannot flood a chat.

End to end with the real clients: the openai SDK on a FakeLLM that ignores ``max_tokens``, aiogram
on the fake Bot API, discord.py on the fake Discord. What is checked is what crosses the wire
(messages sent, edits, the model's stream hung up on) and what is stored.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.console import ConsoleAdapter
from adapters.telegram.split import utf16_len
from bot.app import App
from bot.config import ConfigError, settings_from_mapping
from bot.conversation.preview import CURSOR, EditThrottle, LivePreview
from bot.conversation.reply_cap import NOTE, REPLY_LIMIT, Cut, StreamCap, cut, fit_messages
from bot.conversation.service import Done
from bot.llm.client import TextDelta
from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory, private
from tests.discord_harness import GENERAL, running_discord, world
from tests.telegram_harness import fed_bot

DEFAULT_CHARS = 12_000
DEFAULT_MESSAGES = 5


def runaway(chars: int = 300_000) -> str:
    """An answer far past any ``max_tokens``: numbered paragraphs of prose."""
    paragraphs: list[str] = []
    total = 0
    while total < chars:
        paragraph = f"Part {len(paragraphs)}: " + "the model keeps on talking about it " * 8
        paragraphs.append(paragraph.strip())
        total += len(paragraph) + 2
    return "\n\n".join(paragraphs)


def words(text: str) -> list[str]:
    return text.split()


async def stored_answer(app: App, key: str) -> str:
    [turn] = await app.store.load_window(key, 10)
    return str(turn.messages[-1]["content"])


def bot_asked_for_a_limit(fake: FakeLLM) -> None:
    body = fake.chat_requests[-1].json
    assert (body.get("max_tokens") or body.get("max_completion_tokens")) == 1024


# ------------------------------------------------------------------ the pure cut


def _texts() -> st.SearchStrategy[str]:
    """Prose with the awkward parts: astral emoji, ZWJ sequences, accents, fences, and
    surrogate pairs left as two code points (a provider that split one across deltas)."""
    pieces = st.sampled_from(
        [
            "a",
            "word ",
            ". ",
            "\n",
            "\n\n",
            "```py\n",
            "\n```\n",
            "~~~\n",
            "😀",
            "👩\u200d💻",
            "e\u0301",
            "🇫🇷",
            "👍🏽",
            "\ud83d\ude00",
            "\u0301" * 40,
            "\u2060",
            " ",
        ]
    )
    return st.lists(st.one_of(pieces, st.text(max_size=5)), max_size=80).map("".join)


def _split_pair(text: str, index: int) -> bool:
    return (
        0 < index < len(text)
        and "\ud800" <= text[index - 1] <= "\udbff"
        and "\udc00" <= text[index] <= "\udfff"
    )


@given(text=_texts(), limit=st.integers(min_value=0, max_value=400))
def test_cut_is_a_short_prefix_with_the_note(text: str, limit: int) -> None:
    result = cut(text, limit)
    assert text.startswith(result.kept)
    assert len(result.kept) <= limit
    assert result.tail.endswith(NOTE)
    assert not _split_pair(text, len(result.kept))
    if "```" not in result.kept and "~~~" not in result.kept:  # no fence to close
        assert len(result.text) <= limit + len(" …\n\n" + NOTE)
    if len(text) > limit:  # a boundary is looked for in the last fifth only
        assert len(result.kept) >= limit - limit // 5 - 33


@given(text=_texts(), limit=st.integers(min_value=0, max_value=200), data=st.data())
def test_a_streamed_cut_never_takes_back_what_was_shown(
    text: str, limit: int, data: st.DataObject
) -> None:
    sizes = data.draw(st.lists(st.integers(min_value=1, max_value=9), max_size=60))
    deltas, start = [], 0
    for size in [*sizes, len(text)]:
        if start < len(text):
            deltas.append(text[start : start + size])
            start += size
    cap = StreamCap(limit)
    shown: list[str] = []
    done: Cut | None = None
    for delta in deltas:
        passed, done = cap.feed(delta)
        shown.append(passed)
        if done is not None:
            break
    if len(text) <= limit:
        assert done is None and "".join(shown) == text
        return
    assert done is not None
    assert "".join(shown) == done.kept  # what the previews showed is what is kept
    assert len(done.kept) <= limit and text.startswith(done.kept)


def test_cut_prefers_a_paragraph_and_closes_an_open_fence() -> None:
    first = "A first paragraph of prose, " * 3 + "ending here."
    text = first + "\n\nThe second one, far longer than the limit allows."
    assert cut(text, len(first) + 12).kept == first + "\n\n"
    assert cut(text, len(first) + 12).tail == NOTE
    assert cut(text, len(first) // 2).text.endswith(" …\n\n" + NOTE)  # a space, mid-sentence
    code = "Here:\n\n```python\n" + "print('x')\n" * 20
    result = cut(code, 100)
    assert result.tail == "```\n\n" + NOTE
    assert result.kept.endswith("\n")


async def _chunks_of(size: int, text: str) -> Sequence[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@settings(deadline=None)
@given(text=_texts(), size=st.integers(min_value=60, max_value=200), most=st.integers(1, 4))
def test_fit_messages_keeps_within_the_count(text: str, size: int, most: int) -> None:
    async def split(value: str) -> Sequence[str]:
        return await _chunks_of(size, value)

    fitted = asyncio.run(fit_messages(text, split, most))
    if len(asyncio.run(split(text))) <= most:
        assert fitted.cut is None
        assert list(fitted.messages) == asyncio.run(split(text))
        return
    assert fitted.cut is not None
    assert text.startswith(fitted.cut.kept)
    assert list(fitted.messages) == asyncio.run(split(fitted.cut.text))  # what is sent
    assert len(fitted.messages) <= most


class _Shows:
    def __init__(self) -> None:
        self.shown: dict[int, str] = {}

    async def show(self, index: int, text: str) -> None:
        self.shown[index] = text


@pytest.mark.parametrize("most", [1, 2, 3])
async def test_a_preview_never_rolls_over_past_the_message_cap(most: int) -> None:
    shows = _Shows()
    live = LivePreview(
        shows, EditThrottle(0, 0), "chat", private=True, rollover=100, max_messages=most
    )
    for _ in range(200):
        await live.feed("twelve chars")
    assert sorted(shows.shown) == list(range(most))
    assert all(len(text) <= 100 + len(CURSOR) for text in shows.shown.values())
    assert shows.shown[most - 1].endswith(CURSOR)  # the last one waits for the final text


def test_limits_are_validated() -> None:
    limits = settings_from_mapping({}).limits
    assert (limits.max_reply_chars, limits.max_reply_messages) == (DEFAULT_CHARS, DEFAULT_MESSAGES)
    with pytest.raises(ConfigError, match=r"limits\.max_reply_messages"):
        settings_from_mapping({"limits": {"max_reply_messages": 0}})
    with pytest.raises(ConfigError, match=r"limits\.max_reply_chars"):
        settings_from_mapping({"limits": {"max_reply_chars": 100}})


# ------------------------------------------------------------------ the service


async def test_non_streamed_answer_is_cut_and_stored_as_cut(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.ignore_max_tokens = True
    text = runaway()
    fake_llm.script(reply(text), reply("short"))
    async with make_app() as app:
        answer = await app.service.chat(private(), "tell me everything")
        assert len(answer.text) <= DEFAULT_CHARS + len(NOTE) + 8
        assert answer.text.endswith(NOTE)
        assert answer.capped and not answer.truncated
        assert answer.finish_reason == REPLY_LIMIT
        assert text.startswith(answer.text.removesuffix(NOTE).rstrip(" …\n"))
        assert await stored_answer(app, answer.conversation_key) == answer.text
        await app.service.chat(private(), "and then?")
    bot_asked_for_a_limit(fake_llm)
    sent = fake_llm.chat_requests[-1].json["messages"]
    assert sent[-2] == {"role": "assistant", "content": answer.text}  # what the user saw


async def test_streamed_answer_stops_reading_the_model_at_the_cap(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.ignore_max_tokens = True
    fake_llm.script(reply(runaway()))
    deltas: list[str] = []
    async with make_app() as app:
        async for event in app.service.stream(private(), "tell me everything"):
            if isinstance(event, TextDelta):
                deltas.append(event.text)
            elif isinstance(event, Done):
                done = event.reply
        assert len(done.text) <= DEFAULT_CHARS + len(NOTE) + 8
        assert "".join(deltas) == done.text  # the note is streamed too (the console shows it)
        assert done.capped and done.text.endswith(NOTE)
        assert await stored_answer(app, done.conversation_key) == done.text
        assert done.usage.completion_tokens > 0  # a stream hung up on is still billed
    assert fake_llm.chat_requests[-1].disconnected  # we stopped paying for the rest


async def test_console_prints_the_cut_answer_and_the_note(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.ignore_max_tokens = True
    fake_llm.script(reply(runaway()))
    out = io.StringIO()
    async with make_app() as app:
        console = ConsoleAdapter(app.platform, stdin=io.StringIO(), stdout=out)
        await console.handle("tell me everything")
        stored = await stored_answer(app, app.service.conversation_key(console.ctx))
    assert out.getvalue().rstrip("\n").endswith(NOTE)
    assert out.getvalue().strip() == stored
    assert fake_llm.chat_requests[-1].disconnected


# ------------------------------------------------------------------ Telegram


def _preview_edits(tg: FakeTelegram) -> int:
    """Plain-text edits: the streamed preview's (the final formatting is HTML)."""
    return sum(
        1
        for c in tg.calls
        if c.method == "editMessageText" and c.error is None and not c.params.get("parse_mode")
    )


def _sends(tg: FakeTelegram, chat_id: int) -> int:
    return sum(
        1
        for c in tg.calls
        if c.method == "sendMessage" and c.error is None and int(c.params["chat_id"]) == chat_id
    )


async def _telegram_runaway(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    tg: FakeTelegram,
    *,
    stream: bool,
    limits: dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], str, int]:
    fake_llm.ignore_max_tokens = True
    fake_llm.stream_interval = 0.001  # slow enough for the preview to roll over as it grows
    fake_llm.script(reply(runaway()))
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    section = {"stream": stream, "edit_interval_private": 0.05}
    async with fed_bot(make_app, tg, telegram=section, limits=limits or {}) as fed:
        tg.send(chat, alice, "tell me everything")
        await fed.feed(timeout=30)
        stored = await stored_answer(fed.app, "telegram:7:u:7")
    return tg.messages(chat["id"]), stored, _sends(tg, chat["id"])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_telegram_runaway_answer_is_capped(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram, stream: bool
) -> None:
    messages, stored, sends = await _telegram_runaway(
        make_app, fake_llm, fake_telegram, stream=stream
    )
    assert 1 < len(messages) <= DEFAULT_MESSAGES
    assert sends <= DEFAULT_MESSAGES  # streamed rollovers included
    assert messages[-1]["text"].endswith(NOTE)
    assert all(NOTE not in m["text"] for m in messages[:-1])
    assert all(utf16_len(m["text"]) <= 4096 for m in messages)
    assert stored.endswith(NOTE) and len(stored) <= DEFAULT_CHARS + len(NOTE) + 8
    assert words(" ".join(m["text"] for m in messages)) == words(stored)  # stored as shown
    bot_asked_for_a_limit(fake_llm)
    if stream:
        assert fake_llm.chat_requests[-1].disconnected
        assert _preview_edits(fake_telegram) > 1


async def test_telegram_streamed_rollovers_stop_at_the_message_cap(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    messages, stored, sends = await _telegram_runaway(
        make_app, fake_llm, fake_telegram, stream=True, limits={"max_reply_messages": 2}
    )
    assert len(messages) == 2
    assert sends == 2  # the preview did not roll over into a third message
    assert _preview_edits(fake_telegram) > 1
    assert messages[-1]["text"].endswith(NOTE)
    assert words(" ".join(m["text"] for m in messages)) == words(stored)
    assert len(stored) < DEFAULT_CHARS  # cut further than the character cap, to fit


# ------------------------------------------------------------------ Discord


async def test_discord_streamed_runaway_answer_is_capped(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    fake_llm.ignore_max_tokens = True
    fake_llm.stream_interval = 0.001  # slow enough for the preview to roll over as it grows
    fake_llm.script(reply(runaway()))
    async with running_discord(make_app, dc, discord={"edit_interval": 0.05}) as (app, _):
        dc.message(w.general, w.admin, f"<@{dc.application_id}> tell me everything")
        await dc.wait_until(
            lambda: any(NOTE in m["content"] for m in dc.messages(GENERAL)), timeout=30
        )
        await dc.wait_idle(quiet=0.5, timeout=30)
        stored = await stored_answer(app, f"discord:{GENERAL}")
    messages = dc.messages(GENERAL)
    assert 1 < len(messages) <= DEFAULT_MESSAGES
    assert len(dc.sent) <= DEFAULT_MESSAGES  # every message ever created, rollovers included
    assert messages[-1]["content"].endswith(NOTE)
    assert all(len(m["content"]) <= 2000 for m in messages)
    assert words(" ".join(m["content"] for m in messages)) == words(stored)
    assert fake_llm.chat_requests[-1].disconnected
    assert sum(1 for r in dc.requests if r.method == "PATCH" and "/messages/" in r.path) > 1


async def test_discord_ask_without_streaming_is_capped(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    fake_llm.ignore_max_tokens = True
    fake_llm.script(reply(runaway()))
    async with running_discord(make_app, dc, discord={"stream": False}) as (app, _):
        interaction = dc.slash(w.general, w.admin, "ask", {"prompt": "tell me everything"})
        await dc.wait_until(lambda: any(NOTE in m["content"] for m in dc.sent), timeout=30)
        await dc.wait_idle(quiet=0.5, timeout=30)
        stored = await stored_answer(app, f"discord:{GENERAL}")
    original = dc.original(int(interaction["id"]))
    assert original is not None
    shown = [original, *dc.followups(int(interaction["id"]))]
    assert len(shown) <= DEFAULT_MESSAGES
    assert len(dc.sent) <= DEFAULT_MESSAGES
    assert shown[-1]["content"].endswith(NOTE)
    assert words(" ".join(m["content"] for m in shown)) == words(stored)
