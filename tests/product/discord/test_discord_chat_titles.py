"""Discord tells the chat directory what each chat is called: ``"<server> #<channel>"`` (a
thread by its own name, a slash command too), a DM by the person's display name."""

from __future__ import annotations

from bot.testing.fake_discord import FakeDiscord
from bot.testing.fake_llm import FakeLLM
from tests.conftest import AppFactory
from tests.discord_harness import RANDOM, THREAD, running_discord, world


async def test_channels_threads_and_dms_are_listed_by_name(
    make_app: AppFactory, fake_llm: FakeLLM, fake_discord: FakeDiscord
) -> None:
    dc = fake_discord
    w = world(dc)
    dm = dc.dm(w.member)
    async with running_discord(make_app, dc) as (app, _):
        dc.slash(w.random, w.admin, "ask", {"prompt": "hi from random"})
        dc.slash(w.thread, w.admin, "ask", {"prompt": "hi from the thread"})
        dc.message(dm, w.member, "hello in private")
        await dc.wait_until(lambda: len(fake_llm.chat_requests) >= 3)
        await dc.wait_idle(quiet=0.4)
        chats = {c.chat_key: (c.title, c.chat_type) for c in await app.store.list_chats()}
    assert chats[f"discord:{RANDOM}"] == ("Parlour HQ #random", "group")
    assert chats[f"discord:{THREAD}"] == ("Parlour HQ #ideas", "group")
    assert chats[f"discord:{dm['id']}"] == ("Bob", "private")
    assert set(chats) == {f"discord:{RANDOM}", f"discord:{THREAD}", f"discord:{dm['id']}"}
