"""A message's attachments turned into what the model reads and what the history keeps.

Run inside the conversation's turn, after admission (access, rate, budgets): a refused or
over-size attachment costs no transcription, and nothing is stored before it is accepted.

* **Images**, ``llm.vision`` on: each goes to the model as an ``image_url`` part holding a
  ``data:`` URL of its bytes; the text beside it, and the history, get a reference line
  (``[image: photo.jpg, 1280x960, 84 KB]``), so later turns never send the picture again. The
  bytes are not kept anywhere. Vision off: an image alone is answered "I can't see images" with
  no model call; with text beside it the text is answered and the model is told an image came
  that it cannot see.
* **Voice**, ``llm.transcription_model`` set: transcribed (:mod:`bot.llm.transcription`); the
  transcript, marked ``[voice message, transcribed]``, is the user's message, stored and
  answered as text. Without a transcription model voice is refused clearly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.config import LLMSettings
from bot.llm.client import LLMClient
from bot.llm.transcription import Transcriber
from bot.platform.media import (
    AttachmentKind,
    Attachments,
    MediaCaps,
    MediaRefusedError,
    check_caps,
    data_url,
    reference,
)

__all__ = ["CANNOT_SEE", "NO_VOICE", "TRANSCRIBED", "MediaInput", "UserInput"]

TRANSCRIBED = "[voice message, transcribed]"
CANNOT_SEE = (
    "I can't see images here (image input is switched off for this bot). Tell me in words "
    "what you'd like to know."
)
NO_VOICE = "I can't listen to voice messages here; please send me some text."
UNSEEN_NOTE = (
    "(The user attached {what} that you cannot see: image input is off for this bot. If the "
    "answer depends on it, say that you cannot see images.)"
)


@dataclass(frozen=True, slots=True)
class UserInput:
    """One user message ready for the prompt.

    ``text``: the message text as the model reads it; ``stored``: what the history keeps
    (references, never bytes); ``images``: the ``image_url`` content parts sent beside
    ``text`` in this request only; ``query``: what memory recall searches for."""

    text: str
    stored: str
    query: str
    images: tuple[dict[str, Any], ...] = field(default=())

    @classmethod
    def plain(cls, text: str) -> UserInput:
        return cls(text, text, text)


class MediaInput:
    """``clean``: the admission's text check (cleans a transcript, refuses one too long)."""

    def __init__(self, settings: LLMSettings, llm: LLMClient, clean: Callable[[str], str]) -> None:
        self.vision = settings.vision
        self.caps = MediaCaps.of(settings)
        model = settings.transcription_model
        self.transcriber = Transcriber(llm, model) if model else None
        self._clean = clean

    async def read(self, text: str, attachments: Attachments) -> UserInput:
        """``text`` (already admitted; may be empty beside attachments) with ``attachments``
        (a source is awaited here); raises :class:`MediaRefusedError` (or an ``LLMError``
        from transcription)."""
        if callable(attachments):
            attachments = await attachments()
        if not attachments:  # a source found nothing: the text alone, if there is one
            return UserInput.plain(text or self._clean(text))
        images = [a for a in attachments if a.kind is AttachmentKind.IMAGE]
        voices = [a for a in attachments if a.kind is AttachmentKind.VOICE]
        if voices and self.transcriber is None:
            raise MediaRefusedError(
                "voice message without llm.transcription_model", chat_text=NO_VOICE
            )
        if images and not self.vision and not text and not voices:
            raise MediaRefusedError("image with vision off and no text", chat_text=CANNOT_SEE)
        # the caps hold for what is sent: an image the model will not see needs no bytes
        check_caps([*(images if self.vision else ()), *voices], self.caps)
        lines = [text] if text else []
        heard: list[str] = []
        for voice in voices:
            assert self.transcriber is not None
            words = await self.transcriber.transcribe(voice)
            if not words.strip():
                raise MediaRefusedError(
                    "empty transcript",
                    chat_text="I couldn't make out any words in that voice message.",
                )
            words = self._clean(words)
            heard.append(words)
            lines.append(f"{TRANSCRIBED} {words}")
        lines += [reference(image) for image in images]
        stored = "\n".join(lines)
        self._clean(stored)  # the whole message within limits.max_input_chars
        query = "\n".join([text, *heard]).strip() or stored
        if not images:
            return UserInput(stored, stored, query)
        if not self.vision:
            what = "an image" if len(images) == 1 else f"{len(images)} images"
            return UserInput(f"{stored}\n{UNSEEN_NOTE.format(what=what)}", stored, query)
        parts = tuple(
            {"type": "image_url", "image_url": {"url": data_url(image)}} for image in images
        )
        return UserInput(stored, stored, query, parts)
