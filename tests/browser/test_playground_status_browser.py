"""The playground and the status page in a real browser (headless Chromium): an answer is drawn
while it streams and as text (markup in it never runs), no token is in the page or its script;
the status page shows the adapters and the last warnings masked, and runs the checks."""

from __future__ import annotations

import logging

import aiohttp
from playwright.async_api import expect

from bot.testing.fake_llm import FakeLLM, reply
from tests.browser_harness import chromium, log_in, overflows
from tests.conftest import AppFactory
from tests.http_harness import ADMIN_TOKEN, CHAT_TOKEN, serve_http

HOSTILE = 'Sure: <img src=x onerror="window.pwned=1"> and <script>window.pwned=2</script> done.'
ANSWER = "Tram 28 climbs to the castle; ride it early, before the crowds, and walk down."


STREAMED = 60_000  # ms for a streamed answer at 0.15 s a chunk to be whole, on a loaded machine


async def test_the_playground_draws_the_answer_while_it_streams(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.stream_interval = 0.15  # a slow model, so the browser can be seen mid-answer
    fake_llm.script(reply(ANSWER), reply(HOSTILE))
    async with serve_http(make_app) as served, chromium() as browser:
        page = await browser.new_page()
        await log_in(page, served.url, ADMIN_TOKEN)
        await page.click("header.top nav a:has-text('Playground')")
        await expect(page.locator("h1")).to_have_text("Playground")

        await page.fill("#message", "Is tram 28 worth it?")
        await page.keyboard.press("Enter")  # Enter sends
        reply_text = page.locator(".playground-log article.turn .reply").last
        partial = await page.wait_for_function(
            """(full) => {
                const shown = document.querySelector(".playground-log .turn:last-child .reply");
                const text = shown ? shown.textContent : "";
                return text.length > 0 && text.length < full.length ? text : false;
            }""",
            arg=ANSWER,
        )
        assert ANSWER.startswith(await partial.json_value())  # part of it, drawn in place
        await expect(reply_text).to_have_text(ANSWER, timeout=STREAMED)
        await expect(page.locator(".playground-log article.turn.pending")).to_have_count(0)
        await expect(page.locator(".playground-error")).to_be_hidden()

        await page.fill("#message", "Say something with markup")
        await page.click("form.playground-form button[type=submit]")
        await expect(reply_text).to_have_text(HOSTILE, timeout=STREAMED)  # shown as text
        assert await page.evaluate("window.pwned") is None
        assert await page.locator(".playground-log img").count() == 0

        await page.reload()  # the conversation is stored: the page draws it from the server
        turns = page.locator(".playground-log article.turn")
        await expect(turns).to_have_count(2)
        await expect(turns.first).to_contain_text("Is tram 28 worth it?")
        await expect(turns.first).to_contain_text(ANSWER)
        assert await page.evaluate("window.pwned") is None

        source = await page.content()
        async with (
            aiohttp.ClientSession(served.url) as http,
            http.get("/static/playground.js") as r,
        ):
            script = await r.text()
        for secret in (ADMIN_TOKEN, CHAT_TOKEN):
            assert secret not in source and secret not in script
        chats = [chat.chat_key for chat in await served.app.store.list_chats()]
        assert chats == ["http:ops:playground"]


async def test_the_status_page_shows_what_is_wrong_masked(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, chromium() as browser:
        logging.getLogger("adapters.http.example").warning(
            "a client sent the admin token %s in a query string", ADMIN_TOKEN
        )
        context = await browser.new_context(viewport={"width": 375, "height": 700})
        page = await context.new_page()
        await log_in(page, served.url, ADMIN_TOKEN)
        await page.click("header.top nav a:has-text('Status')")
        await expect(page.locator("h1")).to_have_text("Status")
        assert not await overflows(page)

        http_row = page.locator("table.adapters tbody tr").first
        await expect(http_row).to_contain_text("http")
        await expect(http_row.locator(".state")).to_have_text("running")
        line = page.locator("table.log tbody tr", has_text="a client sent the admin token")
        await expect(line).to_contain_text("the admin token *** in a query string")
        await expect(line.locator(".state")).to_have_text("WARNING")

        await page.click("button:has-text('Run the checks')")
        rows = page.locator("table.doctor tbody tr")
        await expect(rows.first).to_contain_text("config")
        await expect(page.locator("table.doctor tr.check-fail")).to_have_count(0)
        await expect(page.locator("table.doctor")).to_contain_text("serving this page")
        assert not await overflows(page)
        assert ADMIN_TOKEN not in await page.content()

        await page.goto(f"{served.url}/playground")
        assert not await overflows(page)
