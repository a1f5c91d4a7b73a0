"""The scheduled posts page in a real browser (headless Chromium): a post set through the form
(its CSRF field sent, a known group offered) is listed with its next run; a bad time zone shows
the reason and keeps what was typed; cancelling asks first; a phone gets no sideways scroll."""

from __future__ import annotations

from playwright.async_api import Dialog, expect

from bot.scheduling.kinds import SCHEDULED_POSTS_KIND
from bot.testing.fake_llm import FakeLLM, reply
from tests.browser_harness import chromium, log_in, overflows
from tests.conftest import AppFactory, group
from tests.http_harness import ADMIN_TOKEN, serve_http


async def test_schedule_through_the_form_then_cancel(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, chromium() as browser:
        app = served.app
        fake_llm.script(reply("hello"))
        await app.service.chat(group("1", "Alice"), "we ship on Friday")  # a group it knows
        context = await browser.new_context(viewport={"width": 375, "height": 700})
        page = await context.new_page()
        await log_in(page, served.url, ADMIN_TOKEN)
        await page.click("header.top nav a:has-text('Schedules')")
        await expect(page.locator("h1")).to_have_text("Scheduled posts")
        rows = page.locator("table.schedules tbody tr")
        await expect(rows.first).to_contain_text("No posts are scheduled.")
        offered = page.locator("#known-chats option")
        await expect(offered).to_have_count(1)
        assert await offered.first.get_attribute("value") == "telegram:-100"
        assert not await overflows(page)

        await page.fill("#chat_key", "telegram:-100")
        await page.fill("#schedule", "every monday 09:00 Europe/Berln")
        await page.fill("#prompt", "Summarise last week's discussion")
        await page.click("form.schedule-form button[type=submit]")
        await expect(page.locator(".error")).to_contain_text(
            "Not scheduled: Unknown time zone 'Europe/Berln'"
        )
        await expect(page.locator("#prompt")).to_have_value("Summarise last week's discussion")

        await page.fill("#schedule", "every monday 09:00 Europe/Berlin")
        await page.click("form.schedule-form button[type=submit]")
        await expect(page.locator(".notice")).to_have_text("Scheduled post #1 created.")
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_contain_text("every Monday at 09:00 (Europe/Berlin)")
        await expect(rows.first).to_contain_text("Summarise last week's discussion")
        await expect(rows.first).to_contain_text("telegram:-100")
        assert app.scheduler is not None
        (job,) = app.scheduler.pending(SCHEDULED_POSTS_KIND)
        shown = await rows.first.locator("time").get_attribute("datetime")
        assert shown == job.next_run.isoformat()
        assert not await overflows(page)

        asked: list[str] = []

        async def accept(dialog: Dialog) -> None:
            asked.append(dialog.message)
            await dialog.accept()

        page.on("dialog", accept)
        await rows.first.locator("button:has-text('Cancel')").click()
        await expect(page.locator(".notice")).to_have_text("Scheduled post cancelled.")
        await expect(rows.first).to_contain_text("No posts are scheduled.")
        assert asked == ["Cancel this scheduled post?"]
        assert app.scheduler.pending(SCHEDULED_POSTS_KIND) == []
