"""A failed connection to the LLM says why: refused, unknown host, TLS, timed out, unreachable.

The SDK's aiohttp transport reports every connect failure as ``APITimeoutError``; a closed port
used to be logged as "request timed out", which sends people looking at the wrong thing.
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator

import httpx2
import openai
import pytest

from bot.errors import LLMUnavailableError
from bot.llm.retry import RetryPolicy, call_with_retry, classify, connection_problem

REQUEST = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # nothing listens there now: connecting is refused


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts the connection and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        yield server.getsockname()[1]


async def _sdk_failure(port: int) -> BaseException:
    client = openai.AsyncOpenAI(
        api_key="k",
        base_url=f"http://127.0.0.1:{port}/v1",
        max_retries=0,
        timeout=0.5,
        http_client=openai.DefaultAioHttpClient(timeout=0.5),  # the transport Endpoint uses
    )
    try:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    except openai.APIError as exc:
        return exc
    finally:
        await client.close()
    raise AssertionError("the request succeeded")


async def test_a_closed_port_is_connection_refused_not_a_timeout() -> None:
    error, retryable = classify(await _sdk_failure(_closed_port()), endpoint="local (m)")
    assert isinstance(error, LLMUnavailableError) and retryable
    assert str(error).startswith("local (m): connection refused")
    assert "timed out" not in str(error)


async def test_a_server_that_never_answers_is_a_timeout(silent_port: int) -> None:
    error, _ = classify(await _sdk_failure(silent_port), endpoint="e")
    assert str(error) == "e: request timed out"


async def test_the_final_error_after_retries_names_the_cause() -> None:
    port = _closed_port()

    async def call() -> None:
        raise await _sdk_failure(port)

    async def no_sleep(seconds: float) -> None:
        pass

    with pytest.raises(LLMUnavailableError, match="connection refused"):
        await call_with_retry(call, RetryPolicy(max_attempts=2), endpoint="e", sleep=no_sleep)


def _wrapped(cause: BaseException, kind: type[openai.APIConnectionError]) -> BaseException:
    try:
        try:
            raise cause
        except BaseException as inner:
            raise OSError(f"Cannot connect to host: {inner}") from inner  # aiohttp's wrapper
    except OSError as transport:
        if kind is openai.APITimeoutError:
            error: openai.APIConnectionError = openai.APITimeoutError(REQUEST)
        else:
            error = kind(request=REQUEST)
        error.__cause__ = transport
        return error


@pytest.mark.parametrize(
    ("cause", "words"),
    [
        (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), "connection refused"),
        (socket.gaierror(-2, "Name or service not known"), "host not found"),
        (ssl.SSLCertVerificationError("certificate verify failed"), "TLS handshake failed"),
        (TimeoutError(), "request timed out"),
        (ConnectionResetError(errno.ECONNRESET, "reset"), "connection lost"),
        (OSError(errno.EHOSTUNREACH, "No route to host"), "unreachable (No route to host)"),
    ],
)
@pytest.mark.parametrize("kind", [openai.APITimeoutError, openai.APIConnectionError])
def test_the_cause_chain_decides_the_words(
    cause: BaseException, words: str, kind: type[openai.APIConnectionError]
) -> None:
    error, retryable = classify(_wrapped(cause, kind), endpoint="e")
    assert str(error).startswith(f"e: {words}") and retryable


def test_without_a_cause_the_sdk_error_decides() -> None:
    assert connection_problem(openai.APIConnectionError(request=REQUEST)) is None
    assert str(classify(openai.APITimeoutError(REQUEST), endpoint="e")[0]) == "e: request timed out"
    failed = classify(openai.APIConnectionError(request=REQUEST), endpoint="e")[0]
    assert str(failed) == "e: connection failed"
