"""A suite-wide fence: a test fails if any log record it produced carries a token or a key.

The product masks secrets in the handler the entry point installs (``bot.guardrails.redact``);
in-process
tests have no such handler, so this guard sees what code really logs. ``secret_scan`` (autouse,
imported by ``tests/conftest.py``) puts a handler on the root logger for each test, formats every
record that reaches it (message, exception text, stack) and, after the test, fails it if a known
secret or a key- or token-shaped string appears. It sees records at the level the test logs at:
WARNING and up by default, everything in the tests that ask ``caplog`` for DEBUG (the ones that
drive failing flows with keys around). ``find_secrets`` is also used on subprocess output.

Masked forms never match: the shapes need the full run of key characters, so ``***``, OpenAI's
``sk-cli*********3210`` and ``sk-te...cdef`` pass.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

# Real credential shapes. The look-behinds keep "task-scheduler" or a longer number from matching.
SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("OpenAI-style key", re.compile(r"(?<![\w-])sk-[A-Za-z0-9_-]{8,}")),
    ("Telegram bot token", re.compile(r"(?<![\d])\d{6,}:[A-Za-z0-9_-]{30,}")),
    (
        "Discord bot token",
        re.compile(r"(?<![\w-])[MN][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}"),
    ),
)
_MIN_LITERAL = 8  # shorter values ("nope", "abc") are too common to scan for


@functools.cache
def known_secrets() -> frozenset[str]:
    """The fixed secrets the suite and the test kit use (tokens by their secret part)."""
    from bot.testing.fake_discord import FakeDiscord
    from bot.testing.fake_telegram import FakeTelegram
    from tests.conftest import TEST_KEY
    from tests.product.app.test_cli import SECRET

    telegram = inspect.signature(FakeTelegram.__init__).parameters["token"].default
    discord = inspect.signature(FakeDiscord.__init__).parameters["token"].default
    return frozenset({TEST_KEY, SECRET, str(telegram).partition(":")[2], str(discord)})


def live_secrets(values: Iterable[Any]) -> set[str]:
    """Secrets held by the fakes a test used: tokens, interaction tokens, required API keys."""
    from bot.testing.fake_discord import FakeDiscord
    from bot.testing.fake_llm import FakeLLM
    from bot.testing.fake_telegram import FakeTelegram

    found: set[str] = set()
    for value in values:
        if isinstance(value, FakeTelegram):
            found.add(value.token.partition(":")[2])
        elif isinstance(value, FakeDiscord):
            found.update(bot.token for bot in value.bots)  # every application it hosts
            # Each interaction carries a token that can post as the bot for 15 minutes.
            found.update(i.token for i in getattr(value, "_interactions", {}).values())
        elif isinstance(value, FakeLLM) and value.api_key:
            found.add(value.api_key)
    return found


def find_secrets(text: str, literals: Iterable[str] = ()) -> list[str]:
    """What in ``text`` is a secret: each as ``<kind>: <first characters>…`` for a report."""
    hits = [
        f"known secret: {value[:6]}…"
        for value in literals
        if len(value) >= _MIN_LITERAL and value in text
    ]
    for kind, pattern in SHAPES:
        hits.extend(f"{kind}: {match.group()[:6]}…" for match in pattern.finditer(text))
    return hits


class _Scanner(logging.Handler):
    """Formats each record as a handler would and keeps the ones with a secret in them."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.texts: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            parts = [record.getMessage()]
        except Exception:  # a broken format string is the logging module's to report
            parts = [str(record.msg), repr(record.args)]
        if record.exc_info:
            parts.append(logging.Formatter().formatException(record.exc_info))
        if record.exc_text:
            parts.append(record.exc_text)
        if record.stack_info:
            parts.append(record.stack_info)
        self.texts.append((record.name, "\n".join(parts)))


@pytest.fixture(autouse=True)
def secret_scan(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if a token or key appears in any log record it produced."""
    scanner = _Scanner()
    root = logging.getLogger()
    root.addHandler(scanner)
    try:
        yield
    finally:
        root.removeHandler(scanner)
    values = getattr(request.node, "funcargs", {}).values()
    literals = known_secrets() | live_secrets(values)
    leaks = dict.fromkeys(
        f"{name}: {hit}" for name, text in scanner.texts for hit in find_secrets(text, literals)
    )
    if leaks:
        pytest.fail("secrets in log records:\n  " + "\n  ".join(leaks), pytrace=False)
