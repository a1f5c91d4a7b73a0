"""The dashboard in a real browser (headless Chromium): log in, find a chat, open it, clear it
and see the audit name the token; a wrong token gets no session; phones get no sideways scroll;
a cookie copied before logging out is refused afterwards."""

from __future__ import annotations

import aiohttp
from playwright.async_api import Page, expect

from adapters.http.auth import COOKIE
from bot.testing.fake_llm import FakeLLM, reply
from tests.browser_harness import chromium, log_in, overflows
from tests.conftest import AppFactory, group
from tests.http_harness import ADMIN_TOKEN, Served, serve_http


async def seed(served: Served, fake_llm: FakeLLM) -> None:
    """Two group chats with a turn each (two speakers in the first)."""
    fake_llm.script(
        reply("Lisbon in May is lovely: book the tram 28 early."),
        reply("Bring a light jacket for the evenings."),
        reply("The standup moves to 10:30 tomorrow."),
    )
    service = served.app.service
    await service.chat(group("1", "Alice", chat="-1001"), "Where should we go in May?")
    await service.chat(group("2", "Bruno", chat="-1001"), "What should I pack?")
    await service.chat(group("3", "Chen", chat="-2002"), "When is the standup?")


async def test_log_in_find_open_and_clear_a_chat(make_app: AppFactory, fake_llm: FakeLLM) -> None:
    async with serve_http(make_app) as served, chromium() as browser:
        await seed(served, fake_llm)
        page = await browser.new_page()
        await log_in(page, served.url, ADMIN_TOKEN)
        await expect(page).to_have_url(f"{served.url}/")
        rows = page.locator("table.chats tbody tr")
        await expect(rows).to_have_count(2)

        await page.fill("#q", "-1001")
        await page.click("form.search button")
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_contain_text("telegram")
        await expect(rows.first).to_contain_text("2")  # turns
        await rows.first.locator("a").click()

        await expect(page.locator("h1")).to_contain_text("telegram:-1001")
        turns = page.locator("article.turn")
        await expect(turns).to_have_count(2)
        await expect(page.locator(".history")).to_contain_text("Alice")
        await expect(page.locator(".history")).to_contain_text("Bruno")
        await expect(page.locator(".history")).to_contain_text("Where should we go in May?")
        await expect(page.locator(".history")).to_contain_text("book the tram 28 early")
        await expect(page.locator(".persona")).to_be_visible()

        dialogs: list[str] = []

        async def accept(dialog: object) -> None:
            dialogs.append(dialog.message)  # type: ignore[attr-defined]
            await dialog.accept()  # type: ignore[attr-defined]

        page.on("dialog", accept)
        await page.click("button.danger:has-text('Clear history')")
        await expect(page.locator(".notice")).to_contain_text("2 turns deleted")
        assert dialogs and "Clear this chat's history?" in dialogs[0]
        await expect(turns).to_have_count(0)
        audit = page.locator("table.audit tbody tr")
        await expect(audit.first.locator("td.who")).to_have_text("token ops")  # marked a token
        await expect(audit.first).to_contain_text("clear")

        assert await served.app.store.conversations() == [("telegram:-2002", 1)]
        entries = await served.app.store.audit("telegram:-1001")
        assert [(e.action, e.actor_name) for e in entries] == [("clear", "http:ops")]


async def test_a_dismissed_confirmation_clears_nothing(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, chromium() as browser:
        await seed(served, fake_llm)
        page = await browser.new_page()
        await log_in(page, served.url, ADMIN_TOKEN)
        await page.goto(f"{served.url}/chats/telegram:-2002")
        page.on("dialog", lambda dialog: dialog.dismiss())
        await page.click("button.danger:has-text('Clear history')")
        await expect(page.locator("article.turn")).to_have_count(1)
        assert await served.app.store.audit("telegram:-2002") == []


async def test_a_wrong_token_is_refused_without_a_session(make_app: AppFactory) -> None:
    async with serve_http(make_app) as served, chromium() as browser:
        context = await browser.new_context()
        page = await context.new_page()
        await log_in(page, served.url, "not-the-admin-token")
        await expect(page.locator(".error")).to_contain_text("not an admin token")
        assert await context.cookies() == []
        await page.goto(f"{served.url}/")
        await expect(page).to_have_url(f"{served.url}/login?next=/")


async def test_phone_width_has_no_sideways_scroll_and_logout_ends_the_session(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, chromium() as browser:
        await seed(served, fake_llm)
        context = await browser.new_context(viewport={"width": 375, "height": 700})
        page = await context.new_page()
        await log_in(page, served.url, ADMIN_TOKEN)
        for path in ("/", "/chats/telegram:-1001", "/usage", "/reminders", "/tools"):
            await page.goto(f"{served.url}{path}")
            assert not await overflows(page), path
        await check_usage_chart(page)

        await page.click("form.logout button")
        await expect(page).to_have_url(f"{served.url}/login")
        await page.goto(f"{served.url}/usage")
        await expect(page).to_have_url(f"{served.url}/login?next=/usage")


async def test_a_copied_cookie_stops_working_after_logout(make_app: AppFactory) -> None:
    """Someone who copied the session cookie before the logout cannot use it afterwards."""
    async with serve_http(make_app) as served, chromium() as browser:
        context = await browser.new_context()
        page = await context.new_page()
        await log_in(page, served.url, ADMIN_TOKEN)
        await expect(page).to_have_url(f"{served.url}/")
        copied = next(c["value"] for c in await context.cookies() if c["name"] == COOKIE)
        headers = {"Cookie": f"{COOKIE}={copied}"}
        async with aiohttp.ClientSession(served.url, headers=headers) as http:
            async with http.get("/api/chats") as r:
                assert r.status == 200  # the copy works while the session lasts

            await page.click("form.logout button")
            await expect(page).to_have_url(f"{served.url}/login")
            assert await context.cookies() == []

            async with http.get("/usage", allow_redirects=False) as r:
                assert r.status == 303 and r.headers["Location"] == "/login?next=/usage"
            async with http.get("/api/chats") as r:
                assert r.status == 401


async def check_usage_chart(page: Page) -> None:
    """The usage page's chart is drawn on the server: bars are in the HTML, no script needed."""
    await page.goto(page.url.rsplit("/", 1)[0] + "/usage")
    assert await page.locator("svg.chart rect.completion").count() >= 1
