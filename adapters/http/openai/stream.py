"""``stream: true``: the bot's answer as OpenAI's server-sent ``chat.completion.chunk`` events.

The first event of the turn is awaited before anything is sent, so a refusal (rate, budget,
access, a model that is down) is still a proper status code in OpenAI's error shape. Then:
a chunk with ``role: assistant``, the content deltas, a chunk with the finish reason, the usage
chunk when ``stream_options.include_usage`` asked for it, and ``data: [DONE]``. A failure
after the first chunk is an ``error`` event (the status is already sent), and the stream ends.
Tool calls run inside the bot; the client sees only text. A client that goes away stops the
turn: closing the service's generator marks it unanswered, nothing is half stored.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator

from aiohttp import web

from adapters.http.openai.errors import from_exception
from adapters.http.openai.wire import MODEL, completion_id, finish_reason, usage
from bot.conversation.events import Done, TextDelta, ToolFinished
from bot.errors import UserFacingError

__all__ = ["stream_answer"]

log = logging.getLogger(__name__)

ROUND_BREAK = "\n\n"  # between the text of a tool round and the text after the tools


class _Chunks:
    """Chunks of one streamed completion (one id and creation time for all)."""

    def __init__(self) -> None:
        self.id = completion_id()
        self.created = int(time.time())

    def event(self, choices: list[dict[str, object]], **extra: object) -> bytes:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": MODEL,
            "choices": choices,
            **extra,
        }
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()

    def delta(self, delta: dict[str, str], finish: str | None = None) -> bytes:
        return self.event([{"index": 0, "delta": delta, "finish_reason": finish}])


async def stream_answer(
    request: web.Request, events: AsyncGenerator[object, None], include_usage: bool
) -> web.StreamResponse:
    """Send the turn ``events`` (from ``ChatService.stream``) as OpenAI's stream does."""
    async with contextlib.aclosing(events) as turn:
        try:
            event = await anext(turn)
        except Exception as exc:
            if isinstance(exc, UserFacingError):
                log.info("streamed chat completion refused: %s", exc)
            return from_exception(exc).response()
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",  # a proxy in front must not hold the deltas back
            }
        )
        chunks = _Chunks()
        try:  # a client gone before the first chunk fails prepare(): the same hang-up
            await response.prepare(request)
            await response.write(chunks.delta({"role": "assistant", "content": ""}))
            await _send(response, chunks, turn, event, include_usage)
        except ConnectionResetError:
            log.info("stream client went away; the turn is stopped")
            return response
        except Exception as exc:
            with contextlib.suppress(ConnectionResetError):
                await response.write(from_exception(exc).sse())
            return response
    with contextlib.suppress(ConnectionResetError):
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
    return response


async def _send(
    response: web.StreamResponse,
    chunks: _Chunks,
    turn: AsyncGenerator[object, None],
    event: object,
    include_usage: bool,
) -> None:
    """Write the deltas from ``event`` on, through the finish (and usage) chunk."""
    said = after_tools = False
    while not isinstance(event, Done):
        if isinstance(event, TextDelta) and event.text:
            text = ROUND_BREAK + event.text if said and after_tools else event.text
            said, after_tools = True, False
            await response.write(chunks.delta({"content": text}))
        elif isinstance(event, ToolFinished):
            after_tools = True
        event = await anext(turn)
    reply = event.reply
    await response.write(chunks.delta({}, finish_reason(reply)))
    if include_usage:
        await response.write(chunks.event([], usage=usage(reply)))
