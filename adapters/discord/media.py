"""A Discord message's images and voice message, fetched as bytes for the core.

discord.py describes each file of a message as an ``Attachment``: ``content_type``, ``size``,
``width``/``height`` for images, and for a recorded voice message (the message flag
IS_VOICE_MESSAGE) ``is_voice_message()`` with its ``duration``. Images (``image/*``) and voice
messages go to the core as :class:`bot.platform.media.Attachment`; other files (a PDF, a song)
are left out, and the text beside them is answered as usual.

Only what the core will use is downloaded: an image when ``llm.vision`` is on, of a type the
model takes, within ``llm.max_image_bytes`` and ``llm.max_images``; a voice message when
``llm.transcription_model`` is set, within ``llm.max_audio_bytes``. Anything else is handed
over without bytes but with the size Discord declared, and the core refuses it with a clear
reply (:func:`bot.platform.media.check_caps`) or says it cannot see images; nothing is fetched for a
message that would be refused anyway.

The adapter hands the core a source (:func:`fetch_media` bound to the message), which the core
awaits once the message is admitted, inside the conversation's turn: a refused message (access,
rate) costs no download, and a text sent right after a picture waits behind it.

The bytes come through discord.py (``Attachment.read()``: the CDN, which needs no token). The
CDN URL is a bearer link to the user's file: it never leaves this module, neither to the model
nor to the log.
"""

from __future__ import annotations

import asyncio
import logging
import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass

import aiohttp
import discord

from bot.config import LLMSettings
from bot.platform.media import (
    IMAGE_MIME_TYPES,
    Attachment,
    AttachmentKind,
    MediaCaps,
    MediaRefusedError,
    reference,
)

__all__ = [
    "UNAVAILABLE",
    "FileInfo",
    "MediaPolicy",
    "fetch_media",
    "file_info",
    "has_media",
    "media_source",
    "plan",
    "with_references",
]

log = logging.getLogger(__name__)

UNAVAILABLE = "I couldn't fetch that file from Discord; please send it again."
FETCH_TIMEOUT = 30.0  # seconds per file: the conversation's next messages wait behind it
_FETCH_ERRORS = (discord.HTTPException, aiohttp.ClientError, OSError, TimeoutError)


@dataclass(frozen=True, slots=True)
class MediaPolicy:
    """What ``llm`` allows: the caps, whether images are seen and voice is transcribed."""

    caps: MediaCaps
    vision: bool
    transcribes: bool

    @classmethod
    def of(cls, llm: LLMSettings) -> MediaPolicy:
        return cls(MediaCaps.of(llm), llm.vision, llm.transcription_model is not None)


@dataclass(frozen=True, slots=True)
class FileInfo:
    """What Discord says about one attachment, as plain data (the rules below are pure)."""

    name: str
    mime_type: str
    size: int
    voice: bool
    width: int | None = None
    height: int | None = None
    duration: float | None = None

    @property
    def kind(self) -> AttachmentKind | None:
        """VOICE for a recorded voice message, IMAGE for ``image/*``, else None (left out)."""
        if self.voice:
            return AttachmentKind.VOICE
        if self.mime_type.startswith("image/"):
            return AttachmentKind.IMAGE
        return None


def file_info(attachment: discord.Attachment) -> FileInfo:
    """``content_type`` without its parameters (``audio/ogg; codecs=opus``); when Discord
    gives none, the type the file name suggests."""
    declared = attachment.content_type or mimetypes.guess_type(attachment.filename)[0] or ""
    return FileInfo(
        name=attachment.filename,
        mime_type=declared.split(";", 1)[0].strip().lower(),
        size=attachment.size,
        voice=attachment.is_voice_message(),
        width=attachment.width,
        height=attachment.height,
        duration=attachment.duration,
    )


def plan(files: Sequence[FileInfo], policy: MediaPolicy) -> list[tuple[int, bool]]:
    """The images and voice messages among ``files``: their positions, each with whether to
    download it.

    Nothing is fetched when the images are more than ``max_images`` (the core refuses the
    message); otherwise each file that the core will send or transcribe is.
    """
    caps = policy.caps
    images = sum(1 for f in files if f.kind is AttachmentKind.IMAGE)
    too_many = images > caps.max_images
    planned = []
    for position, each in enumerate(files):
        if each.kind is None:
            continue
        if each.kind is AttachmentKind.IMAGE:
            fetch = (
                policy.vision
                and each.mime_type in IMAGE_MIME_TYPES
                and each.size <= caps.max_image_bytes
            )
        else:
            fetch = policy.transcribes and each.size <= caps.max_audio_bytes
        planned.append((position, fetch and not too_many))
    return planned


def has_media(message: discord.Message) -> bool:
    """Whether the message has an image or a voice message (no I/O: called on arrival)."""
    return any(file_info(a).kind is not None for a in message.attachments)


def media_source(message: discord.Message, me: int) -> discord.Message | None:
    """The message whose files go with this one: its own, else those of the message it replies
    to ("@bot what is this?" answering someone's picture; never the bot's own); None: none."""
    if has_media(message):
        return message
    reference = message.reference
    replied = reference.resolved if reference is not None else None
    if isinstance(replied, discord.Message) and replied.author.id != me and has_media(replied):
        return replied
    return None


async def fetch_media(message: discord.Message, policy: MediaPolicy) -> tuple[Attachment, ...]:
    """The message's images and voice message for the core, downloaded as :func:`plan` says.

    Raises :class:`MediaRefusedError` (``chat_text`` asks to send it again) when Discord does
    not serve a file; logged with the ids, never the URL.
    """
    files = message.attachments
    infos = [file_info(a) for a in files]
    planned = plan(infos, policy)
    blobs: list[bytes] = [b""] * len(planned)
    fetching = [n for n, (_, fetch) in enumerate(planned) if fetch]
    if fetching:
        read = await asyncio.gather(*(_read(message, files[planned[n][0]]) for n in fetching))
        for n, data in zip(fetching, read, strict=True):
            blobs[n] = data
    return tuple(
        _attachment(infos[position], data, fetched=fetch)
        for (position, fetch), data in zip(planned, blobs, strict=True)
    )


def with_references(text: str, message: discord.Message) -> str:
    """``text`` with a reference line per image or voice message (``[image: cat.png, 3x2,
    84 KB]``): what the history keeps of a message the bot only overhears; nothing is fetched."""
    infos = [file_info(a) for a in message.attachments]
    lines = [reference(_attachment(info, b"", fetched=False)) for info in infos if info.kind]
    return "\n".join([text, *lines]) if lines else text


async def _read(message: discord.Message, attachment: discord.Attachment) -> bytes:
    try:
        async with asyncio.timeout(FETCH_TIMEOUT):
            return await attachment.read()
    except _FETCH_ERRORS as exc:
        log.warning(
            "discord: attachment not fetched channel=%s message=%s attachment=%s: %s",
            message.channel.id,
            message.id,
            attachment.id,
            type(exc).__name__,
        )
        raise MediaRefusedError(
            f"attachment {attachment.id} of message {message.id} not fetched",
            chat_text=UNAVAILABLE,
        ) from None


def _attachment(info: FileInfo, data: bytes, *, fetched: bool) -> Attachment:
    kind = info.kind
    assert kind is not None
    return Attachment(
        kind=kind,
        data=data,
        mime_type=info.mime_type,
        name=info.name,
        width=info.width,
        height=info.height,
        duration=info.duration,
        size=None if fetched else info.size,  # not fetched: the core judges the declared size
    )
