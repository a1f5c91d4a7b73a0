"""Image content parts as the real API checks them, and what a test reads back from them.

``image_url.url`` must be an ``https://`` link (the fake never fetches it: tests never touch
the internet) or a ``data:`` URL of base64 bytes with an image MIME type; the bytes must be a
PNG, JPEG, GIF or WebP image. Failures carry OpenAI's texts and codes: ``invalid_value`` for the
URL's form, ``invalid_image_format`` for bytes that are no supported image. ``detail`` is one
of ``auto``, ``low``, ``high``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

from bot.testing.llm.errors import (
    Invalid,
    Path,
    bad_value,
    fail,
    missing,
    text_path,
    wrong_type,
)

__all__ = ["check_image_url", "decoded", "image_format", "image_urls"]

_DETAILS = ("auto", "low", "high")
_EXPECTED = (
    "Invalid image URL: '{path}'. Expected a base64-encoded data URL with an image MIME type "
    "(e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got {what}."
)
UNSUPPORTED_IMAGE = (
    "You uploaded an unsupported image. Please make sure your image has of one the following "
    "formats: ['png', 'jpeg', 'gif', 'webp']."
)


def check_image_url(path: Path, image: object) -> None:
    """Raise :class:`Invalid` for a bad ``image_url`` object at ``path``."""
    if not isinstance(image, dict):
        raise wrong_type(path, "an object", image)
    url = image.get("url")
    upath = (*path, "url")
    if "url" not in image:
        raise missing(upath)
    if not isinstance(url, str):
        raise wrong_type(upath, "a string", url)
    detail = image.get("detail")
    if detail is not None and detail not in _DETAILS:
        raise bad_value((*path, "detail"), detail, _DETAILS)
    if url.startswith("https://"):
        return
    if not url.startswith("data:"):
        raise _bad_url(upath, "a value without the 'data:' prefix")
    header, comma, payload = url[5:].partition(",")
    mime, _, encoding = header.partition(";")
    if not comma or encoding != "base64":
        raise _bad_url(upath, "a value that is not base64-encoded")
    if not mime.startswith("image/"):
        raise _bad_url(upath, f"a value with the MIME type '{mime}'")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise _bad_url(upath, "an invalid base64-encoded value") from None
    if not data:
        raise _bad_url(upath, "empty base64-encoded bytes")
    if image_format(data) is None:
        raise fail(UNSUPPORTED_IMAGE, None, "invalid_image_format")


def image_format(data: bytes) -> str | None:
    """``png``, ``jpeg``, ``gif`` or ``webp`` from the bytes' signature; None otherwise."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def image_urls(body: Any) -> Iterator[str]:
    """Every ``image_url.url`` in a chat request's messages, in order."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else ():
            if isinstance(part, dict) and part.get("type") == "image_url":
                image = part.get("image_url")
                if isinstance(image, dict) and isinstance(image.get("url"), str):
                    yield image["url"]


def decoded(url: str) -> bytes | None:
    """The bytes of a base64 ``data:`` URL (None for a link)."""
    if not url.startswith("data:"):
        return None
    return base64.b64decode(url.partition(",")[2])


def _bad_url(path: Path, what: str) -> Invalid:
    return fail(_EXPECTED.format(path=text_path(path), what=what), path, "invalid_value")
