"""The knowledge pages in a real browser (headless Chromium): a document uploaded through the
form (its CSRF field sent first, as the page orders it) is listed and its chunks are shown as
text; a refused document shows the reason; removing one asks first; a phone gets no sideways
scroll."""

from __future__ import annotations

from playwright.async_api import Dialog, expect

from tests.browser_harness import chromium, log_in, overflows
from tests.conftest import AppFactory
from tests.http_harness import ADMIN_TOKEN, serve_http

KNOWLEDGE = {"bases": {"docs": {"description": "Product docs"}}}
GUIDE = (
    b'# Setup\n\nRun <img src=x onerror="window.pwned=1"> then restart.\n\n'
    b"## Network\n\nOpen port 8090 on the firewall.\n"
)


async def test_upload_through_the_form_and_read_its_chunks(make_app: AppFactory) -> None:
    async with serve_http(make_app, knowledge=KNOWLEDGE) as served, chromium() as browser:
        context = await browser.new_context(viewport={"width": 375, "height": 700})
        page = await context.new_page()
        await log_in(page, served.url, ADMIN_TOKEN)
        await page.click("header.top nav a:has-text('Knowledge')")
        await expect(page.locator("h1")).to_have_text("Knowledge bases")
        await page.click("table.bases a:has-text('docs')")
        await expect(page.locator("h1")).to_have_text("docs")
        assert not await overflows(page)

        await page.set_input_files(
            "#file", files=[{"name": "setup.md", "mimeType": "text/markdown", "buffer": GUIDE}]
        )
        await page.fill("#source", "guides/setup guide.md")
        await page.click("form.upload-form button[type=submit]")
        await expect(page.locator(".notice")).to_have_text("guides/setup guide.md added.")
        rows = page.locator("table.documents tbody tr")
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_contain_text("markdown")
        await expect(rows.first).to_contain_text("http:ops")

        await rows.first.locator("a:has-text('guides/setup guide.md')").click()
        await expect(page.locator("h1")).to_have_text("guides/setup guide.md")
        chunks = page.locator("article.chunk")
        await expect(chunks).to_have_count(2)
        await expect(chunks.nth(1).locator(".heading-path")).to_have_text("Setup › Network")
        await expect(chunks.first.locator(".chunk-text")).to_have_text(
            'Run <img src=x onerror="window.pwned=1"> then restart.'
        )  # shown as text: no image, nothing run
        assert await page.locator("article.chunk img").count() == 0
        assert await page.evaluate("window.pwned") is None
        assert not await overflows(page)

        await page.click(".crumbs a:has-text('docs')")
        await page.set_input_files(
            "#file",
            files=[{"name": "broken.pdf", "mimeType": "application/pdf", "buffer": b"%PDF-1 x"}],
        )
        await page.click("form.upload-form button[type=submit]")
        await expect(page.locator(".error")).to_contain_text(
            "Nothing was added: broken.pdf: not a readable PDF"
        )
        await expect(rows).to_have_count(1)

        asked: list[str] = []

        async def accept(dialog: Dialog) -> None:
            asked.append(dialog.message)
            await dialog.accept()

        page.on("dialog", accept)
        await rows.first.locator("button:has-text('Remove')").click()
        await expect(page.locator(".notice")).to_have_text("guides/setup guide.md removed.")
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_contain_text("No documents in this base yet.")
        assert asked and "Remove this document" in asked[0]
        assert await served.app.store.list_documents("docs") == []
