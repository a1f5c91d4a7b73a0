"""How ``FakeLLM`` meets HTTP: the recorded request, the API-key check, and OpenAI's headers,
JSON and error responses and server-sent-event streams, as the real API sends them."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot.testing.llm.images import decoded, image_urls
from bot.testing.llm.transcriptions import Upload, parse_form
from bot.testing.llm.wire import ApiError, JSONDict, mask_key, request_id, sse_event

_NO_KEY = (
    "You didn't provide an API key. You need to provide your API key in an Authorization header "
    "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with "
    "blank username) if you're accessing the API from your browser and are prompted for a "
    "username and password. You can obtain an API key from "
    "https://platform.openai.com/account/api-keys."
)
_WRONG_KEY = (
    "Incorrect API key provided: {masked}. You can find your API key at "
    "https://platform.openai.com/account/api-keys."
)
SHUTTING_DOWN = ApiError(503, "The server is shutting down.", type="server_error")


@dataclass(slots=True)
class RecordedRequest:
    """One request as received: header names lower-cased, ``json`` None when not JSON.

    ``received_at`` is ``time.monotonic()`` on arrival, before any latency is applied;
    ``disconnected`` is True when a streamed answer did not reach its end (the client hung up;
    also while it is still being written). ``usage`` is the ``usage`` object the answer
    carried (None until answered, for failures, and with ``report_usage`` off);
    ``cached_tokens`` reads the emulated prefix cache's count from it.
    """

    method: str
    path: str
    headers: dict[str, str]
    json: Any
    body: bytes = b""
    received_at: float = field(default_factory=time.monotonic)
    disconnected: bool = False
    usage: JSONDict | None = None
    form: dict[str, str] = field(default_factory=dict)  # a multipart body's plain fields
    files: dict[str, Upload] = field(default_factory=dict)  # ... and its files

    @property
    def image_urls(self) -> list[str]:
        """Every ``image_url.url`` the request's messages carry, in order."""
        return list(image_urls(self.json))

    @property
    def images(self) -> list[bytes]:
        """The bytes of every image sent as a ``data:`` URL, in order (links are left out)."""
        return [data for url in self.image_urls if (data := decoded(url)) is not None]

    @property
    def cached_tokens(self) -> int | None:
        """``usage.prompt_tokens_details.cached_tokens`` as reported, or None if no usage."""
        if self.usage is None:
            return None
        return int(self.usage["prompt_tokens_details"]["cached_tokens"])


async def record_request(request: web.Request) -> RecordedRequest:
    """Read the whole body (an oversized one is recorded empty) and parse it if it is JSON."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raw = b""
    try:
        parsed: Any = json.loads(raw) if raw else None
    except ValueError:
        parsed = None
    headers = {k.lower(): v for k, v in request.headers.items()}
    form, files = parse_form(headers.get("content-type", ""), raw) if parsed is None else ({}, {})
    return RecordedRequest(
        request.method, request.path, headers, parsed, raw, form=form, files=files
    )


def auth_failure(api_key: str | None, request: web.Request) -> ApiError | None:
    """OpenAI's 401 for a missing or wrong bearer key; None when ``api_key`` is None (any)."""
    if api_key is None:
        return None
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    key = key.strip()
    if scheme.lower() != "bearer" or not key:
        return ApiError(401, _NO_KEY)
    if key != api_key:
        message = _WRONG_KEY.format(masked=mask_key(key))
        return ApiError(401, message, code="invalid_api_key")
    return None


def api_headers(started: float | None = None) -> dict[str, str]:
    """The headers every answer carries; ``openai-processing-ms`` counted from ``started``."""
    headers = {"x-request-id": request_id(), "openai-version": "2020-10-01"}
    if started is not None:
        headers["openai-processing-ms"] = str(int((time.monotonic() - started) * 1000))
    return headers


def json_response(payload: JSONDict, *, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=json.dumps(payload).encode(),
        content_type="application/json",
        headers=headers if headers is not None else api_headers(),
    )


def error_response(failure: ApiError) -> web.Response:
    headers = {**api_headers(), **failure.headers}
    return web.Response(
        status=failure.status,
        body=json.dumps(failure.body()).encode(),
        content_type="application/json",
        headers=headers,
    )


async def stream_response(
    request: web.Request,
    record: RecordedRequest,
    chunks: Iterable[JSONDict],
    headers: dict[str, str],
    interval: float,
) -> web.StreamResponse:
    """Send chunks as server-sent events, one write each (``interval`` seconds apart), then
    ``data: [DONE]``; ``record.disconnected`` stays True if the client hung up first."""
    response = web.StreamResponse(headers=headers)
    response.content_type = "text/event-stream"
    response.charset = "utf-8"
    response.headers["Cache-Control"] = "no-cache"
    record.disconnected = True  # until the last byte is out: a cancelled handler counts
    try:
        await response.prepare(request)
        for index, chunk in enumerate(chunks):
            if index and interval:
                await asyncio.sleep(interval)
            await response.write(sse_event(chunk))
        await response.write(sse_event("[DONE]"))
        await response.write_eof()
        record.disconnected = False
    except ConnectionError:
        pass  # the client went away mid-stream, as clients do
    return response
