"""A fake OpenAI-compatible chat server, so bots can be tested offline and deterministically.

It speaks the real wire protocol (status codes, error bodies, headers, SSE streaming) well
enough that the official ``openai`` SDK is the client in tests::

    async with FakeLLM() as fake:
        fake.script(reply("Hi!"), rate_limited(retry_after=2))
        client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-test")

Image content parts are checked as OpenAI checks them (an ``https`` link, or a base64
``data:`` URL of a PNG, JPEG, GIF or WebP; else its 400) and read back with
``RecordedRequest.images`` (the bytes) and ``.image_urls``. ``/v1/audio/transcriptions``
takes OpenAI's multipart form and answers ``fake.script_transcriptions(reply("..."), ...)``,
else ``default_transcript(audio)``; ``fake.transcription_requests`` holds each upload
(``files["file"]``, ``form``).

Unscripted requests get ``echo: <the newest user message>``, unless that message holds a
marker (:mod:`bot.testing.llm.markers`): ``[[tool:NAME {"arg": ...}]]`` answers with that tool
call (NAME must be among the request's tools) and, once the result comes back, with
``Tool NAME returned: <result>``; ``[[context]]`` (or ``reveal = True``) answers with what the
model was sent: the system prompt's head, the history, the recalled memories, the tools offered.

Run standalone with ``python -m bot.testing.fake_llm --port 8765`` (``--reveal``: every answer
shows its request), e.g. for an offline ``make chat``.
"""

# The public path of the kit; the code lives in :mod:`bot.testing.llm`.

from __future__ import annotations

from bot.testing.llm.cli import main
from bot.testing.llm.server import (
    FakeLLM,
    RecordedRequest,
    Script,
    ScriptedToolCall,
    default_transcript,
    delay,
    error,
    fake_embedding,
    hang,
    held,
    quota_exhausted,
    rate_limited,
    reply,
    tool_calls,
)

__all__ = [
    "FakeLLM",
    "RecordedRequest",
    "Script",
    "ScriptedToolCall",
    "default_transcript",
    "delay",
    "error",
    "fake_embedding",
    "hang",
    "held",
    "main",
    "quota_exhausted",
    "rate_limited",
    "reply",
    "tool_calls",
]

if __name__ == "__main__":
    raise SystemExit(main())
