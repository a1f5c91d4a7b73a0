"""A final reply is rendered once: the messages the core measured to keep it within
``limits.max_reply_messages`` are the ones the adapter sends, not rendered again.

End to end with aiogram on the fake Bot API and discord.py on the fake Discord, streamed and
not, for a short answer, one the model stopped at its output limit (the note is on screen) and a
runaway one the core cut to fit. The renderer is wrapped to record what it was given: the last
text rendered is the one on screen, and every text rendered before it was a try that did not fit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import adapters.discord.output as discord_output
import adapters.discord.reply as discord_reply
import adapters.telegram.output as telegram_output
from adapters.discord.split import split_message
from adapters.telegram.render import markdown_to_html
from bot.app import App
from bot.conversation.reply_cap import NOTE
from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.discord_harness import GENERAL, running_discord, world
from tests.telegram_harness import running_bot

MOST = 2  # limits.max_reply_messages in these tests
OUTPUT_NOTE = "\n\n[reply cut at the output limit]"  # what a chat shows of a "length" finish
SHORT = "A short answer that fits in one message with room to spare."
PROSE = " ".join(f"Sentence {n} of a long explanation goes on." for n in range(400))
CASES = ["short", "truncated", "cut"]


def runaway() -> str:
    return "\n\n".join(
        f"Part {n}: " + "the model keeps on talking about it " * 8 for n in range(60)
    )


def script(fake_llm: FakeLLM, case: str) -> tuple[dict[str, Any], str]:
    """The model's answer for ``case``; the limits it runs under and what ends the reply."""
    limits: dict[str, Any] = {"max_reply_messages": MOST}
    if case == "short":
        fake_llm.script(reply(SHORT))
        return limits, "room to spare"
    if case == "truncated":
        fake_llm.script(reply(PROSE))
        return {**limits, "max_output_tokens": 40}, OUTPUT_NOTE.strip()
    fake_llm.ignore_max_tokens = True
    fake_llm.script(reply(runaway()))
    return limits, NOTE


async def shown_text(app: App, key: str, case: str) -> str:
    """The stored answer as the chat shows it (the output-limit note is not stored)."""
    [turn] = await app.store.load_window(key, 10)
    stored = str(turn.messages[-1]["content"])
    return stored + OUTPUT_NOTE if case == "truncated" else stored


def rendered_once(renders: list[str], shown: str, count: Callable[[str], int]) -> None:
    assert renders, "the reply was never rendered"
    assert renders[-1] == shown  # the text on screen, rendered last
    tries = [count(text) for text in renders[:-1]]
    assert all(n > MOST for n in tries), f"rendered again after a fitting try: {tries}"


@pytest.fixture
def html_renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def recording(markdown: str) -> str:
        seen.append(markdown)
        return markdown_to_html(markdown)

    monkeypatch.setattr(telegram_output, "markdown_to_html", recording)
    return seen


@pytest.fixture
def discord_splits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def recording(text: str, limit: int) -> list[str]:
        seen.append(text)
        return split_message(text, limit)

    monkeypatch.setattr(discord_output, "split_message", recording)
    monkeypatch.setattr(discord_reply, "split_message", recording)
    return seen


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_telegram_renders_the_final_reply_once(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_telegram: FakeTelegram,
    html_renders: list[str],
    stream: bool,
    case: str,
) -> None:
    tg = fake_telegram
    limits, end = script(fake_llm, case)
    alice = tg.user(7, "Alice")
    chat = tg.private_chat(alice)
    section = {"stream": stream, "edit_interval_private": 0.05}
    async with running_bot(make_app, tg, telegram=section, limits=limits) as (app, _):
        tg.send(chat, alice, "tell me")
        await tg.wait_until(lambda: any(end in m["text"] for m in tg.messages(chat["id"])), 30)
        await tg.wait_idle(quiet=0.5, timeout=30)
        shown = await shown_text(app, "telegram:7:u:7", case)
    renders = list(html_renders)
    rendered_once(renders, shown, lambda text: len(telegram_output.render_chunks(text)))
    messages = tg.messages(chat["id"])
    assert 1 <= len(messages) <= MOST
    assert " ".join(m["text"] for m in messages).split() == shown.split()  # intact


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_discord_splits_the_final_reply_once(
    make_app: AppFactory,
    fake_llm: FakeLLM,
    fake_discord: FakeDiscord,
    discord_splits: list[str],
    stream: bool,
    case: str,
) -> None:
    dc = fake_discord
    w = world(dc)
    limits, end = script(fake_llm, case)
    section = {"stream": stream, "edit_interval": 0.05}
    async with running_discord(make_app, dc, discord=section, limits=limits) as (app, _):
        dc.message(w.general, w.admin, f"<@{dc.application_id}> tell me")
        await dc.wait_until(lambda: any(end in m["content"] for m in dc.messages(GENERAL)), 30)
        await dc.wait_idle(quiet=0.5, timeout=30)
        shown = await shown_text(app, f"discord:{GENERAL}", case)
    splits = list(discord_splits)
    rendered_once(splits, shown, lambda text: len(split_message(text, 2000)))
    contents = [m["content"] for m in dc.messages(GENERAL)]
    assert contents == split_message(shown, 2000)  # intact, as measured
    assert 1 <= len(contents) <= MOST
