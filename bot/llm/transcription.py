"""Voice to text through the endpoint's OpenAI-compatible ``/audio/transcriptions``.

The primary endpoint's own SDK client sends it (same base URL, key and transport), behind the
one retry layer (:mod:`bot.llm.retry`), so a failure reaches the user as the same kinds of error
as a completion's: busy (429) is not quota spent, a rejected key names itself. Fallbacks are not
tried: a small local chat model rarely has a speech model beside it. The whole call, retries
included, must finish within ``llm.deadline``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bot.errors import LLMUnavailableError
from bot.llm.client import LLMClient
from bot.llm.retry import call_with_retry
from bot.platform.media import Attachment

__all__ = ["Transcriber"]

log = logging.getLogger(__name__)

# File names the endpoint recognises the format by (it reads the extension, not the type).
_EXTENSIONS = {
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/mp4": "m4a",
    "audio/x-m4a": "m4a",
    "audio/m4a": "m4a",
    "audio/aac": "m4a",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/webm": "webm",
    "audio/flac": "flac",
}


class Transcriber:
    """``model``: ``llm.transcription_model``."""

    def __init__(self, llm: LLMClient, model: str) -> None:
        self.llm = llm
        self.model = model

    async def transcribe(self, voice: Attachment, *, language: str | None = None) -> str:
        """The words of ``voice``, stripped; raises an ``LLMError`` when the endpoint fails."""
        endpoint = self.llm.endpoints[0]
        settings = self.llm.settings
        body: dict[str, Any] = {"model": self.model, "response_format": "json"}
        if language:
            body["language"] = language
        upload = (file_name(voice), voice.data, voice.mime_type)

        async def call() -> str:
            result = await endpoint.client.audio.transcriptions.create(file=upload, **body)
            return str(getattr(result, "text", result))

        name = f"{endpoint.name} transcription ({self.model})"
        try:
            async with asyncio.timeout(settings.deadline):
                text = await call_with_retry(
                    call, self.llm.policy, endpoint=name, sleep=self.llm.sleep
                )
        except TimeoutError:
            raise LLMUnavailableError(
                f"{name}: no transcript within llm.deadline={settings.deadline:g}s"
            ) from None
        log.debug("transcribed %d bytes into %d characters", len(voice.data), len(text))
        return text.strip()


def file_name(voice: Attachment) -> str:
    """The upload's name: the attachment's own if it has an extension, else one that says
    its format."""
    if voice.name and "." in voice.name:
        return voice.name
    extension = _EXTENSIONS.get(voice.mime_type.split(";")[0].strip().lower(), "ogg")
    return f"{voice.name or 'voice'}.{extension}"
