"""Images and voice notes as the core sees them: bytes an adapter fetched, and pure helpers.

An adapter downloads a photo or a voice note from its platform and hands the core an
:class:`Attachment` with the bytes, never the platform's URL (Telegram's file URL holds the bot
token). The model gets an image as a ``data:`` URL of those bytes; the history keeps only a
reference line (:func:`reference`), so later turns never re-send the picture. The byte and count
caps (``llm.max_image_bytes``, ``llm.max_images``, ``llm.max_audio_bytes``) are checked by
:func:`check_caps` before anything is stored or sent.

The type an image is sent under is read from its bytes (:func:`sniff_image_type`), never taken
from the sender: a platform's or a tool's declared type is a claim (an ELF file can arrive as
``image/jpeg``), and a provider refuses, or bills, a part that is not the image it says.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from bot.errors import UserFacingError
from bot.text import clean_text

if TYPE_CHECKING:
    from bot.config import LLMSettings

__all__ = [
    "IMAGE_MIME_TYPES",
    "NOT_AN_IMAGE",
    "UNKNOWN_IMAGE_TOKENS",
    "Attachment",
    "AttachmentKind",
    "AttachmentSource",
    "Attachments",
    "MediaCaps",
    "MediaRefusedError",
    "check_caps",
    "data_url",
    "human_size",
    "image_size",
    "image_tokens",
    "reference",
    "sniff_image_type",
]

# What OpenAI's vision models take (https://platform.openai.com/docs/guides/images-vision).
IMAGE_MIME_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
# OpenAI's tile rule at "auto"/"high" detail: 85 tokens, plus 170 per 512-px tile of the image
# scaled to fit 2048x2048 and then its short side to 768. Its worst case is 768x2048: 8 tiles.
BASE_IMAGE_TOKENS, TILE_TOKENS, TILE = 85, 170, 512
UNKNOWN_IMAGE_TOKENS = BASE_IMAGE_TOKENS + 8 * TILE_TOKENS  # size unknown: count the worst
NOT_AN_IMAGE = "That attachment is not a JPEG, PNG, GIF or WebP image, so I can't look at it."


class AttachmentKind(StrEnum):
    IMAGE = "image"
    VOICE = "voice"  # a voice note or an audio file: transcribed, never sent as audio


@dataclass(frozen=True, slots=True)
class Attachment:
    """One image or voice note of a message, as bytes.

    ``size``: the size the platform declared, for a file the adapter did not download because
    it is over the cap (``data`` is then empty and the core refuses it clearly); None: the
    size is ``len(data)``. ``width``/``height`` in pixels, ``duration`` in seconds, if known.
    """

    kind: AttachmentKind
    data: bytes
    mime_type: str
    name: str = ""
    width: int | None = None
    height: int | None = None
    duration: float | None = None
    size: int | None = None

    @property
    def byte_size(self) -> int:
        return self.size if self.size is not None else len(self.data)

    @property
    def dimensions(self) -> tuple[int, int] | None:
        """Width and height: as the platform said, else read from the image's header."""
        if self.width and self.height:
            return self.width, self.height
        return image_size(self.data) if self.kind is AttachmentKind.IMAGE else None


AttachmentSource = Callable[[], Awaitable[Sequence[Attachment]]]
"""Downloads a message's attachments when the core asks: after admission, inside the
conversation's turn, so a refused message costs no download and messages keep their order."""
Attachments = Sequence[Attachment] | AttachmentSource
"""What ``ChatService.chat``/``stream`` take: the attachments, or a source of them."""


class MediaRefusedError(UserFacingError):
    """An attachment the bot will not take (too big, too many, not an image it can send, voice
    without a transcription model, an image without vision and nothing else to answer)."""

    chat_text = "I can't handle that attachment."


@dataclass(frozen=True, slots=True)
class MediaCaps:
    """The limits from ``llm``: bytes per image, images per message, bytes per voice note."""

    max_image_bytes: int
    max_images: int
    max_audio_bytes: int

    @classmethod
    def of(cls, llm: LLMSettings) -> MediaCaps:
        return cls(llm.max_image_bytes, llm.max_images, llm.max_audio_bytes)


def check_caps(attachments: Sequence[Attachment], caps: MediaCaps) -> None:
    """Raise :class:`MediaRefusedError` (its ``chat_text`` says which limit) when the
    attachments break a cap, or an image is of a type the model cannot take: as declared,
    or as its bytes say (:func:`sniff_image_type`)."""
    images = [a for a in attachments if a.kind is AttachmentKind.IMAGE]
    if len(images) > caps.max_images:
        raise MediaRefusedError(
            f"{len(images)} images over llm.max_images={caps.max_images}",
            chat_text=f"That's {len(images)} images; I can look at {caps.max_images} at most "
            "per message.",
        )
    for each in attachments:
        if each.kind is AttachmentKind.IMAGE:
            cap, what = caps.max_image_bytes, "image"
            if each.mime_type not in IMAGE_MIME_TYPES:
                raise MediaRefusedError(
                    f"image type {each.mime_type!r} not accepted",
                    chat_text="I can only look at JPEG, PNG, GIF and WebP images.",
                )
        else:
            cap, what = caps.max_audio_bytes, "voice message"
        if each.byte_size > cap:
            raise MediaRefusedError(
                f"{what} of {each.byte_size} bytes over the cap of {cap}",
                chat_text=f"That {what} is too big ({human_size(each.byte_size)}; the limit is "
                f"{human_size(cap)}).",
            )
        if each.kind is AttachmentKind.IMAGE and sniff_image_type(each.data) is None:
            raise MediaRefusedError(
                f"image declared {each.mime_type!r} is no JPEG, PNG, GIF or WebP by its bytes",
                chat_text=NOT_AN_IMAGE,
            )


def data_url(attachment: Attachment) -> str:
    """``data:<mime>;base64,<bytes>``: how an image reaches the model, never by a link. The
    type is the one the bytes say; bytes that are no supported image are a ``ValueError``
    (callers refuse them first: :func:`check_caps`, or :func:`sniff_image_type`)."""
    mime = sniff_image_type(attachment.data)
    if mime is None:
        raise ValueError(f"not a JPEG, PNG, GIF or WebP image (declared {attachment.mime_type!r})")
    encoded = base64.b64encode(attachment.data).decode("ascii")
    return f"data:{mime};base64,{encoded}"


def sniff_image_type(data: bytes) -> str | None:
    """The image type the bytes' signature says, one of :data:`IMAGE_MIME_TYPES`; None for
    anything else (what was declared does not matter: it is only the sender's claim)."""
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def reference(attachment: Attachment) -> str:
    """The line the history keeps instead of the image: ``[image: photo.jpg, 1280x960, 84 KB]``
    (a voice note: ``[voice message, 12 s]``). No bytes, no URL."""
    if attachment.kind is AttachmentKind.VOICE:
        seconds = f", {round(attachment.duration)} s" if attachment.duration else ""
        return f"[voice message{seconds}]"
    parts = [_one_line(attachment.name) or "image"]
    size = attachment.dimensions
    if size is not None:
        parts.append(f"{size[0]}x{size[1]}")
    parts.append(human_size(attachment.byte_size))
    return f"[image: {', '.join(parts)}]"


def human_size(size: int) -> str:
    """84 KB, 5 MB, 812 bytes: sizes as a chat message shows them (1 KB = 1024 bytes)."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    megabytes = size / (1024 * 1024)
    return f"{megabytes:.1f} MB".replace(".0 MB", " MB")


def image_tokens(width: int, height: int) -> int:
    """Tokens an image costs at "auto"/"high" detail, by OpenAI's tile rule."""
    if width <= 0 or height <= 0:
        return UNKNOWN_IMAGE_TOKENS
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return BASE_IMAGE_TOKENS + TILE_TOKENS * math.ceil(w / TILE) * math.ceil(h / TILE)


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF, JPEG or WebP header; None when it is none of them."""
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
            return width, height
        if data[:6] in (b"GIF87a", b"GIF89a"):
            width, height = struct.unpack("<HH", data[6:10])
            return width, height
        if data.startswith(b"\xff\xd8"):
            return _jpeg_size(data)
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp_size(data)
    except struct.error:  # cut short
        return None
    return None


_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # frame headers; not DHT, JPG, DAC


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def _one_line(name: str) -> str:
    """A file name as the reference shows it: one line, no brackets that would end it."""
    return " ".join(clean_text(name).replace("[", "(").replace("]", ")").split())[:80]
