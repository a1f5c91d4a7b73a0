"""Headless Chromium for the dashboard's tests: the OS's browser, never one playwright fetches.

``/usr/bin/chromium`` comes from Debian's ``chromium`` package (``.ci/run`` installs it). Where
it is missing the browser tests skip, except under ``PARLOUR_REQUIRE_BROWSER=1`` (CI), where
they fail with the command that fixes it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright

CHROMIUM = Path(os.environ.get("PARLOUR_CHROMIUM", "/usr/bin/chromium"))


def require_chromium() -> None:
    if CHROMIUM.exists():
        return
    message = f"{CHROMIUM} is missing: apt-get install -y chromium"
    if os.environ.get("PARLOUR_REQUIRE_BROWSER") or os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    require_chromium()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            yield browser
        finally:
            await browser.close()


async def log_in(page: Page, base_url: str, token: str) -> None:
    """The login form, as a person fills it in."""
    await page.goto(f"{base_url}/login")
    await page.fill("#token", token)
    await page.click("form[action='/login'] button[type=submit]")
    await page.wait_for_load_state()


async def overflows(page: Page) -> bool:
    """Whether the page scrolls sideways (wider than its viewport)."""
    return bool(
        await page.evaluate(
            "document.documentElement.scrollWidth > document.documentElement.clientWidth"
        )
    )
