"""Secrets never reach logs: the redacting filter and a scan of a whole failing flow's logs."""

from __future__ import annotations

import io
import logging

import pytest

from bot.app import App
from bot.errors import LLMError
from bot.redact import RedactingFilter, Redactor
from bot.testing.fake_llm import FakeLLM, error, rate_limited
from tests.conftest import TEST_KEY, AppFactory, private


@pytest.mark.parametrize(
    "text",
    [
        "calling https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
        "Authorization: Bearer sk-proj-abcdefghijklmnop",
        "key=sk-abcdefghijklmnopqrstuvwxyz",
        f"configured secret {TEST_KEY} leaked",
    ],
)
def test_redactor_masks(text: str) -> None:
    redactor = Redactor([TEST_KEY])
    masked = redactor(text)
    assert "***" in masked
    for secret in ("AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "sk-proj-abcdefghijklmnop", TEST_KEY):
        assert secret not in masked


def test_filter_masks_args_and_tracebacks() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter(Redactor(["hunter2-secret"])))
    logger = logging.getLogger("test.redact")
    logger.addHandler(handler)
    try:
        logger.warning("value %s", "hunter2-secret")
        try:
            raise RuntimeError("boom hunter2-secret")
        except RuntimeError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    assert "hunter2-secret" not in stream.getvalue()
    assert stream.getvalue().count("***") >= 2


async def test_failing_flows_never_log_the_key(
    make_app: AppFactory, fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_llm.script(rate_limited(retry_after=0.01), error(500), error(401), error(400))
    async with make_app() as app:
        await _expect_error(app)
        await _expect_error(app)
        fake_llm.api_key = "sk-another-key-entirely-123456"
        await _expect_error(app)
    assert caplog.records
    assert TEST_KEY not in caplog.text
    assert TEST_KEY[-12:] not in caplog.text


async def _expect_error(app: App) -> None:
    with pytest.raises(LLMError) as info:
        await app.service.chat(private(), "hi")
    assert TEST_KEY not in str(info.value)
    assert TEST_KEY not in info.value.chat_text
