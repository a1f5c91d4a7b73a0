"""The last warnings and errors an operator sees: kept masked (never a secret stored), bounded,
and installed only while an app runs."""

from __future__ import annotations

import logging
import sys

from bot.guardrails.recent_log import MAX_CHARS, RecentLog
from bot.guardrails.redact import MASK, Redactor
from tests.conftest import AppFactory

CONFIGURED = "configured-secret-Zq81xW3v"
TELEGRAM = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"  # a token shape no config names
OPENAI = "sk-proj-abcdefghijklmnop0123"


def record(message: str, *args: object, level: int = logging.WARNING) -> logging.LogRecord:
    """A record handed to the handler itself: the suite's log scan never sees these secrets."""
    return logging.LogRecord("parlour.test", level, __file__, 1, message, args, None)


def failed_with(text: str) -> logging.LogRecord:
    try:
        raise RuntimeError(text)
    except RuntimeError:
        line = record("the call failed", level=logging.ERROR)
        line.exc_info = sys.exc_info()
        return line


def test_every_line_is_stored_masked() -> None:
    recent = RecentLog(Redactor([CONFIGURED]))
    recent.handle(record("config value %s leaked", CONFIGURED))
    recent.handle(record("GET https://api.telegram.org/bot%s/getMe", TELEGRAM))
    recent.handle(failed_with(f"upstream said: Authorization: Bearer {OPENAI}"))
    stored = [(line.message, line.error) for line in recent.lines()]
    assert stored == [
        ("the call failed", f"RuntimeError: upstream said: Authorization: Bearer {MASK}"),
        (f"GET https://api.telegram.org/{MASK}/getMe", ""),  # "bot" runs into the token
        (f"config value {MASK} leaked", ""),
    ]  # newest first
    assert all(
        secret not in repr(line) for line in recent.lines() for secret in (CONFIGURED, OPENAI)
    )
    assert all("AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw" not in repr(line) for line in recent.lines())


def test_a_secret_across_the_cut_is_masked_whole() -> None:
    """Cut first, the line would keep the secret's first characters, which no redactor knows."""
    recent = RecentLog(Redactor([CONFIGURED]))
    padding = "x" * (MAX_CHARS - 10)
    recent.handle(record(padding + CONFIGURED))
    (line,) = recent.lines()
    assert line.message == padding + MASK


def test_only_the_newest_lines_are_kept() -> None:
    recent = RecentLog(Redactor(), kept=3)
    for n in range(5):
        recent.handle(record("warning %d", n))
    assert [line.message for line in recent.lines()] == ["warning 4", "warning 3", "warning 2"]


async def test_the_app_keeps_warnings_while_it_runs_and_no_info(make_app: AppFactory) -> None:
    logger = logging.getLogger("parlour.test.recent")
    async with make_app() as app:
        logger.warning("disk almost full")
        logger.info("an ordinary day")
        logger.error("a failure")
        assert [(line.level, line.message) for line in app.recent_log.lines()][:2] == [
            ("ERROR", "a failure"),
            ("WARNING", "disk almost full"),
        ]
        assert all(line.level != "INFO" for line in app.recent_log.lines())
        assert app.recent_log in logging.getLogger().handlers
    assert app.recent_log not in logging.getLogger().handlers  # removed when the app closed
