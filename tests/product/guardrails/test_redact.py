"""Secrets never reach logs: the redacting filter and a scan of a whole failing flow's logs."""

from __future__ import annotations

import io
import logging

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bot.app import App
from bot.errors import LLMError
from bot.guardrails.redact import MASK, RedactingFilter, Redactor
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


def test_filter_masks_token_shapes_it_was_never_told_about() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter(Redactor()))
    logger = logging.getLogger("test.redact")
    logger.addHandler(handler)
    discord = "MTA5ODc2NTQzMjEwOTg3NjU0.GhIjKl.x9Yz-abcdefghijklmnopqrstuvw_0123"
    try:
        logger.warning("connecting to %s with %s", "redis://:pw-Redis-42@cache:6379", discord)
    finally:
        logger.removeHandler(handler)
    logged = stream.getvalue()
    assert "pw-Redis-42" not in logged and discord.split(".")[2] not in logged
    assert "redis://:***@cache:6379" in logged


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


_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# Surroundings: anything, with the characters tokens are made of (and their separators) often.
_AROUND = st.text(st.sampled_from(_B64URL[:3] + "09:._-/@=\"' \n") | st.characters(), max_size=40)


def _run(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(alphabet), min_size=low, max_size=high)


@st.composite
def _token(draw: st.DrawFn) -> tuple[str, str]:
    """A credential in one of the shapes the masker knows, and its part that must not show."""
    kind = draw(st.sampled_from(["telegram", "openai", "discord", "url", "keyed", "password"]))
    if kind == "telegram":
        secret = draw(_run(_B64URL, 30, 46))
        return f"{draw(_run('0123456789', 6, 12))}:{secret}", secret
    if kind == "openai":
        secret = draw(_run(_B64URL, 20, 60))
        return f"sk-{draw(st.sampled_from(['', 'proj-', 'svcacct-']))}{secret}", secret
    if kind == "discord":
        first = draw(st.sampled_from("MNO")) + draw(_run(_B64URL, 23, 27))
        secret = draw(_run(_B64URL, 27, 40))
        return f"{first}.{draw(_run(_B64URL, 6, 6))}.{secret}", secret
    if kind == "url":
        secret = draw(_run(_B64URL + "!$%&*+,;=~:", 6, 24)) + "Q9"  # never part of the user
        scheme = draw(st.sampled_from(["https", "postgres", "redis", "amqp+ssl"]))
        return f"{scheme}://{draw(_run('abcdefgh', 0, 8))}:{secret}@host.example/x", secret
    if kind == "password":  # people's passwords: short and not random, masked all the same
        name = draw(st.sampled_from(["password", "db_password", "PWD", '"passwd']))
        secret = draw(_run(_B64URL + "!$%*+~", 2, 12)) + "Q9"
        return f"{name}={secret}", secret
    name = draw(st.sampled_from(["api_key", "token", "client_secret", "X-Api-Key", "password"]))
    separator = draw(st.sampled_from([": ", "=", '": "', "': '", " = "]))
    letters = draw(st.lists(st.sampled_from(_B64URL), min_size=14, max_size=40, unique=True))
    secret = "".join(letters) + "Z7"  # long, mixed, no letter repeated much: random-looking
    return f"{name}{separator}{secret}", secret


@settings(max_examples=400, deadline=None)
@given(before=_AROUND, token=_token(), after=_AROUND)
# a key run together with a tail that makes the whole value look less random
@example(before="", token=("api_key: ABCDEFGHIJKLMNZ7", "ABCDEFGHIJKLMNZ7"), after="0" * 17)
def test_token_shapes_are_masked_anywhere(before: str, token: tuple[str, str], after: str) -> None:
    whole, secret = token
    masked = Redactor()(before + whole + after)
    assert secret not in masked
    assert MASK in masked
