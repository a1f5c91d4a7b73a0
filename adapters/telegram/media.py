"""Photos, image documents, voice notes and audio files of a Telegram message, as bytes.

:func:`media_of` (pure) says which files a message carries: of a photo's sizes the largest
whose ``file_size`` is within ``llm.max_image_bytes``; a document whose type is ``image/*``;
``voice``; ``audio``. :class:`TelegramMedia` fetches them when the core asks (after admission,
in the conversation's turn) with ``getFile`` and the file URL. That URL holds the bot token: it
is never logged, stored or handed on; only the bytes leave this module, and a failed download
is reported by its exception's type alone (aiohttp's errors print the URL).

Bytes are fetched only where they are used: images with ``llm.vision`` on, voice with a
``llm.transcription_model``, within the caps and Telegram's 20 MB ``getFile`` limit. Otherwise
the core gets the file's description with no bytes (``Attachment.size``), which is all it needs
to say it cannot see or hear it, or that it is too big.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from aiogram import Bot
from aiogram.exceptions import TelegramBadRequest
from aiogram.types import Message, PhotoSize

from bot.config import LLMSettings
from bot.platform.media import (
    IMAGE_MIME_TYPES,
    Attachment,
    AttachmentKind,
    Attachments,
    MediaRefusedError,
    human_size,
)

__all__ = ["MAX_DOWNLOAD_BYTES", "TelegramFile", "TelegramMedia", "has_media", "media_of"]

log = logging.getLogger(__name__)

MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024  # getFile serves bots files up to this size
_DOWNLOAD_TIMEOUT = 60


@dataclass(frozen=True, slots=True)
class TelegramFile:
    """One file of a message, before it is fetched."""

    kind: AttachmentKind
    file_id: str
    mime_type: str
    name: str
    size: int | None = None  # as Telegram declared it
    width: int | None = None
    height: int | None = None
    duration: float | None = None


def has_media(message: Message) -> bool:
    """A photo, document, voice note or audio file that the bot can read or refuse clearly."""
    return bool(message.photo or message.document or message.voice or message.audio)


def media_of(message: Message, max_image_bytes: int) -> list[TelegramFile]:
    """The files of ``message`` the core is told about (a non-image document is not one)."""
    found: list[TelegramFile] = []
    if message.photo:
        size = _photo_size(message.photo, max_image_bytes)
        found.append(
            TelegramFile(
                AttachmentKind.IMAGE,
                size.file_id,
                "image/jpeg",  # Telegram re-encodes every photo as JPEG
                "photo.jpg",
                size.file_size,
                size.width,
                size.height,
            )
        )
    document = message.document
    if document is not None and (document.mime_type or "").startswith("image/"):
        found.append(
            TelegramFile(
                AttachmentKind.IMAGE,
                document.file_id,
                document.mime_type or "",
                document.file_name or "image",
                document.file_size,
            )
        )
    if message.voice is not None:
        voice = message.voice
        found.append(
            TelegramFile(
                AttachmentKind.VOICE,
                voice.file_id,
                voice.mime_type or "audio/ogg",
                "voice.ogg",
                voice.file_size,
                duration=voice.duration,
            )
        )
    if message.audio is not None:
        audio = message.audio
        found.append(
            TelegramFile(
                AttachmentKind.VOICE,
                audio.file_id,
                audio.mime_type or "audio/mpeg",
                audio.file_name or "audio",
                audio.file_size,
                duration=audio.duration,
            )
        )
    return found


def _photo_size(sizes: Sequence[PhotoSize], cap: int) -> PhotoSize:
    """The largest size within ``cap`` bytes; if none is, the smallest (refused as too big)."""
    by_area = sorted(sizes, key=lambda s: s.width * s.height)
    fitting = [s for s in by_area if (s.file_size or 0) <= cap]
    return fitting[-1] if fitting else by_area[0]


class TelegramMedia:
    """Fetches a message's files for the core (``ChatService.chat(attachments=...)``)."""

    def __init__(self, bot: Bot, llm: LLMSettings) -> None:
        self.bot = bot
        self.llm = llm

    def source(self, message: Message) -> Attachments:
        """What to hand the core: nothing for a text message, else a download on demand."""
        files = media_of(message, self.llm.max_image_bytes)
        if not files:
            return ()
        chat_id = message.chat.id

        async def fetch() -> list[Attachment]:
            return [await self._attachment(each, chat_id) for each in files]

        return fetch

    def _wanted(self, file: TelegramFile) -> bool:
        """Whether the core will use the bytes (else it needs only the description)."""
        if file.kind is AttachmentKind.IMAGE:
            used = self.llm.vision and file.mime_type in IMAGE_MIME_TYPES
            cap = self.llm.max_image_bytes
        else:
            used = self.llm.transcription_model is not None
            cap = self.llm.max_audio_bytes
        return used and (file.size or 0) <= cap

    async def _attachment(self, file: TelegramFile, chat_id: int) -> Attachment:
        data = b""
        if self._wanted(file):
            data = await self._download(file, chat_id)
        return Attachment(
            kind=file.kind,
            data=data,
            mime_type=file.mime_type,
            name=file.name,
            width=file.width,
            height=file.height,
            duration=file.duration,
            size=None if data else (file.size or 0),
        )

    async def _download(self, file: TelegramFile, chat_id: int) -> bytes:
        too_big = MediaRefusedError(
            f"telegram file of {file.size} bytes over getFile's limit",
            chat_text=f"That file is too big for me to fetch from Telegram (bots can fetch "
            f"{human_size(MAX_DOWNLOAD_BYTES)} at most).",
        )
        if (file.size or 0) > MAX_DOWNLOAD_BYTES:
            raise too_big
        try:
            described = await self.bot.get_file(file.file_id)
            if described.file_path is None:
                raise MediaRefusedError("getFile returned no file_path")
            buffer = await self.bot.download_file(described.file_path, timeout=_DOWNLOAD_TIMEOUT)
        except TelegramBadRequest as exc:  # Telegram's own words: no URL, no token
            if "too big" in exc.message:
                raise too_big from None
            log.warning("telegram: getFile failed chat=%s: %s", chat_id, exc.message)
            raise _unfetched(type(exc).__name__) from None
        except MediaRefusedError:
            raise
        except Exception as exc:  # aiohttp's errors print the URL, which holds the token
            log.warning("telegram: file download failed chat=%s: %s", chat_id, type(exc).__name__)
            raise _unfetched(type(exc).__name__) from None
        data = buffer.read() if buffer is not None else b""
        log.debug("telegram: fetched a %s of %d bytes chat=%s", file.kind, len(data), chat_id)
        return data


def _unfetched(reason: str) -> MediaRefusedError:
    return MediaRefusedError(
        f"telegram file download failed ({reason})",
        chat_text="I couldn't fetch that file from Telegram; please send it again.",
    )
