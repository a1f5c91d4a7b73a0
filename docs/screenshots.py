"""Regenerate the dashboard screenshots in docs/images/ from a seeded demo.

    .venv/bin/python docs/screenshots.py

A throwaway bot (SQLite in a temporary folder, the test kit's fake LLM, the demo MCP server and
one that cannot be reached) with a few chats of ordinary conversation (one answer uses the
calculator), its HTTP server on a free port, and the OS's headless Chromium
(``/usr/bin/chromium``, Debian's ``chromium`` package) logging in, trying the playground, running
the status page's checks and taking the pictures.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.async_api import expect  # noqa: E402

from adapters.http.server import HTTPAdapter  # noqa: E402
from bot.app import App  # noqa: E402
from bot.config import settings_from_mapping  # noqa: E402
from bot.context import ChatContext, ChatType  # noqa: E402
from bot.testing.fake_llm import FakeLLM, reply, tool_calls  # noqa: E402
from tests.browser_harness import chromium, log_in  # noqa: E402

IMAGES = ROOT / "docs" / "images"
TOKEN = "demo-admin-token-for-screenshots"

TRIP_TITLE = "Lisbon trip 2027"  # the group's title, as Telegram sends it with every message
TRIP = ChatContext("telegram", "-1001937", ChatType.GROUP, "1", "Alice", chat_title=TRIP_TITLE)
CONVERSATIONS: list[tuple[ChatContext, str, str]] = [
    (TRIP, "Where should we go for the long weekend in May?",
     "Lisbon is a good fit: mild weather, short flights, and the old town is walkable."),
    (ChatContext("telegram", "-1001937", ChatType.GROUP, "2", "Bruno", chat_title=TRIP_TITLE),
     "What should I pack for Lisbon?",
     "Comfortable shoes for the hills, a light jacket for the evenings by the river."),
    (ChatContext("telegram", "-1001937", ChatType.GROUP, "3", "Chen", chat_title=TRIP_TITLE),
     "Is tram 28 worth it? And what do three day passes cost at €6.80?",
     "**Yes**, early in the morning: it gets crowded after ten.\n\n"
     "- three day passes: **€20.40**\n- buy them before you board"),
    (ChatContext("discord", "884112", ChatType.GROUP, "41", "mira", chat_title="Acme #releases"),
     "Can you summarise today's release notes?",
     "Three fixes: faster search, the export button works again, and dark mode."),
    (ChatContext("telegram", "5521", ChatType.PRIVATE, "5521", "Dana", chat_title="Dana"),
     "Remind me how to convert 350°F to Celsius",
     "350°F is about 177°C: subtract 32, then multiply by 5/9."),
    (ChatContext("http", "ops:sam", ChatType.PRIVATE, "ops:sam", "sam", chat_title="sam"),
     "Which plan includes priority support?",
     "The Team plan: replies within four working hours, and a shared inbox."),
]  # fmt: skip
PLAYGROUND = (
    "What can you do for our team chat?",
    "I answer questions in your chats, remember what you ask me to, and use the tools this "
    "deployment gives me: here, the demo MCP server's echo, forecast and chart.",
)
MCP_SERVERS = {
    "demo": {"command": [sys.executable, "-m", "bot.testing.mcp_demo"]},
    "search": {"url": "http://127.0.0.1:9/mcp", "connect_timeout": 2},  # nothing listens there
}


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with FakeLLM(stream_interval=0.02) as fake:
            for _, text, answer in CONVERSATIONS:
                if "€6.80" in text:  # the bot works it out with the calculator plugin
                    fake.script(tool_calls(("calculate", {"expression": "3 * 6.80"})))
                fake.script(reply(answer))
            fake.script(reply(PLAYGROUND[1]))
            settings = settings_from_mapping(
                {
                    "llm": {"base_url": fake.base_url, "api_key": "sk-demo", "model": "demo"},
                    "storage": {"path": str(Path(folder) / "demo.db")},
                    "plugins": ["plugins.calculator"],
                    "limits": {"messages_per_minute": None},
                    "http": {"enabled": True, "listen_port": 0, "admin_tokens": {"ops": TOKEN}},
                    "mcp": {"servers": MCP_SERVERS},
                }
            )
            async with App(settings) as app:
                for ctx, text, _ in CONVERSATIONS:
                    await app.service.chat(ctx, text)
                adapter = HTTPAdapter(app.platform)
                task = app.adapter_runs.start(adapter)
                try:
                    await adapter.ready.wait()
                    assert app.mcp is not None
                    await app.mcp.wait_ready(30, ["demo"])
                    await shoot(f"http://127.0.0.1:{adapter.port}")
                finally:
                    await adapter.stop()
                    await task


async def shoot(url: str) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    async with chromium() as browser:
        page = await browser.new_page(viewport={"width": 1100, "height": 700})
        await log_in(page, url, TOKEN)
        await page.screenshot(path=str(IMAGES / "dashboard-chats.png"), full_page=True)
        await page.goto(f"{url}/chats/{TRIP.chat_key}")
        await page.click("details.tool-call summary")  # one tool call unfolded
        await page.screenshot(path=str(IMAGES / "dashboard-chat.png"), full_page=True)
        await page.goto(f"{url}/playground")
        await page.fill("#message", PLAYGROUND[0])
        await page.click("form.playground-form button[type=submit]")
        await expect(page.locator(".playground-log .reply").last).to_have_text(PLAYGROUND[1])
        await expect(page.locator(".playground-log .pending")).to_have_count(0)
        await page.screenshot(path=str(IMAGES / "dashboard-playground.png"), full_page=True)
        await page.goto(f"{url}/status")
        await page.click("button:has-text('Run the checks')")
        await expect(page.locator("table.doctor")).to_be_visible()
        await page.screenshot(path=str(IMAGES / "dashboard-status.png"), full_page=True)


if __name__ == "__main__":
    asyncio.run(main())
