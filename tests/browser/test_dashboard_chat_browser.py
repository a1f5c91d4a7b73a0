"""A chat's page in a real browser (headless Chromium), issue 27: hostile Markdown shows as text
and runs nothing (with the page's CSP switched off, so escaping alone is what is tested); tool
calls unfold; a cleared chat stays in the list with its title and audit; the turn counts say
what they count and agree with the usage page; an admin changes persona and scope there."""

from __future__ import annotations

from playwright.async_api import Dialog, Page, expect

from bot.testing.fake_llm import FakeLLM, reply, tool_calls
from tests.browser_harness import chromium, log_in, overflows
from tests.conftest import AppFactory, group
from tests.http_harness import ADMIN_TOKEN, serve_http

HOSTILE = (
    "I can **summarise** it.\n\n"
    "<script>alert('script')</script>\n\n"
    "<img src=x onerror=\"alert('img')\">\n\n"
    "[a trap](javascript:alert('link')) and [a good one](https://example.org/)\n\n"
    "<a href=\"javascript:alert('raw')\" onmouseover=\"alert('hover')\">raw html</a>\n\n"
    "<svg onload=\"alert('svg')\"></svg> <iframe src=\"javascript:alert('frame')\"></iframe>"
)
HOSTILE_ARGUMENT = "<img src=y onerror=\"alert('argument')\">" + "9" * 400


def record_dialogs(page: Page) -> list[str]:
    """Every alert, confirm or prompt the page opens (dismissed)."""
    seen: list[str] = []

    async def dismiss(dialog: Dialog) -> None:
        seen.append(dialog.message)
        await dialog.dismiss()

    page.on("dialog", dismiss)
    return seen


async def test_hostile_markdown_and_tool_calls_show_as_text_and_run_nothing(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.script(tool_calls(("calculate", {"expression": HOSTILE_ARGUMENT})), reply(HOSTILE))
    async with (
        serve_http(make_app, plugins=["plugins.calculator"]) as served,
        chromium() as browser,
    ):
        await served.app.service.chat(group(chat="-1"), "<img src=z onerror=\"alert('said')\">")
        # No CSP: a tag that got through would run, so only the escaping stands in the way.
        context = await browser.new_context(bypass_csp=True, viewport={"width": 375, "height": 700})
        page = await context.new_page()
        dialogs = record_dialogs(page)
        await log_in(page, served.url, ADMIN_TOKEN)
        await page.goto(f"{served.url}/chats/telegram:-1")
        answer = page.locator(".answer .markdown")
        await expect(answer.locator("strong")).to_have_text("summarise")
        await expect(answer).to_contain_text("<script>alert('script')</script>")
        await expect(answer).to_contain_text("<img src=x onerror=\"alert('img')\">")
        await expect(answer).to_contain_text("[a trap](javascript:alert('link'))")
        await expect(answer).to_contain_text("<svg onload=\"alert('svg')\"></svg>")
        await expect(answer.locator("a")).to_have_count(1)
        await expect(answer.locator("a")).to_have_attribute("href", "https://example.org/")
        for tag in ("script", "img", "svg", "iframe"):
            await expect(answer.locator(tag)).to_have_count(0)
        await expect(page.locator(".said")).to_have_text("<img src=z onerror=\"alert('said')\">")

        call = page.locator("details.tool-call")
        await expect(call).to_have_count(1)
        await expect(call.locator(".tool-name")).to_have_text("calculate")
        await expect(call.locator("pre.arguments")).to_be_hidden()  # folded
        await call.locator("summary").click()
        await expect(call.locator("pre.arguments")).to_contain_text("onerror=\\\"alert('argument')")
        await expect(call.locator("pre.result")).to_be_visible()
        await expect(call.locator("img")).to_have_count(0)

        await answer.locator("a", has_text="a good one").hover()
        await page.locator(".answer").hover()
        assert not await overflows(page)  # a phone: long tool text wraps
        assert dialogs == []


async def test_a_cleared_chat_stays_listed_and_the_counts_say_what_they_count(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, chromium() as browser:
        service = served.app.service
        for n in range(3):
            await service.chat(group(chat="-2", chat_title="Book Club"), f"question {n}")
        await service.chat(group(chat="-3", chat_title="Chess"), "e4?")
        page = await browser.new_page()
        await log_in(page, served.url, ADMIN_TOKEN)
        await page.goto(f"{served.url}/chats/telegram:-3")
        page.on("dialog", lambda dialog: dialog.accept())
        await page.click("button.danger:has-text('Clear history')")
        await expect(page.locator(".notice")).to_have_text("History cleared: 1 turn deleted.")

        await page.goto(f"{served.url}/")
        rows = page.locator("table.chats tbody tr")
        await expect(rows).to_have_count(2)
        await expect(rows.first).to_contain_text("Chess")  # the clear is its newest activity
        await expect(rows.first.locator("td.num")).to_have_text("0")
        await rows.first.locator("a").click()
        await expect(page.locator("h1")).to_have_text("Chess")
        await expect(page.locator(".facts")).to_contain_text("group")
        await expect(page.locator("table.audit tbody tr").first).to_contain_text(
            "deleted 1 turn, 2 messages"
        )

        await page.goto(f"{served.url}/chats/telegram:-2")
        await page.click("button.danger:has-text('Clear history')")
        await service.chat(group(chat="-2", chat_title="Book Club"), "after the clear")
        await page.reload()
        await expect(page.locator("dd.turns-stored")).to_have_text("1")
        await expect(page.locator("dd.turns-billed")).to_have_text("4")
        await page.locator("dd.turns-billed a").click()
        row = page.locator("table.usage tbody tr", has_text="telegram:-2")
        await expect(row.locator("td.num").first).to_have_text("4")
        await expect(page.locator("table.usage th.num").first).to_have_text("Turns billed")


async def test_an_admin_changes_persona_and_scope_and_the_bot_follows(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    async with serve_http(make_app) as served, chromium() as browser:
        service = served.app.service
        await service.chat(group(chat="-4", chat_title="Trip"), "hello")
        page = await browser.new_page()
        await log_in(page, served.url, ADMIN_TOKEN)
        await page.goto(f"{served.url}/chats/telegram:-4")
        await page.fill("textarea#persona", "You plan trips.\nAnswer in one line.")
        await page.click("button:has-text('Save persona')")
        await expect(page.locator(".notice")).to_have_text(
            "Persona changed: the bot uses it from the next message on."
        )
        await expect(page.locator("h2 .badge")).to_have_text("chat")
        await page.select_option("select#scope", "user")
        await page.click("button:has-text('Change scope')")
        await expect(page.locator(".notice")).to_contain_text("Scope changed")
        await expect(page.locator(".facts")).to_contain_text("user")
        audit = page.locator("table.audit tbody tr")
        await expect(audit).to_have_count(2)
        await expect(audit.nth(0)).to_contain_text("scope")
        await expect(audit.nth(0).locator("td.who")).to_have_text("token ops")
        await expect(audit.nth(1)).to_contain_text(
            'set (35 chars): "You plan trips. Answer in one line."'
        )

        await service.chat(group(chat="-4"), "where to in May?")
        sent = fake_llm.chat_requests[-1].json["messages"]
        assert str(sent[0]["content"]).startswith("You plan trips.\nAnswer in one line.")
        assert service.conversation_key(group(chat="-4")) == "telegram:-4:u:1"

        await page.click('button:has-text("Drop this chat\'s own persona")')
        await expect(page.locator("h2 .badge")).to_have_text("default")
        await expect(audit).to_have_count(3)
