"""The fake Discord's CDN: files users attach to their messages, served at signed URLs.

Discord hosts attachments on ``cdn.discordapp.com`` (and a resizing proxy on
``media.discordapp.net``) at ``/attachments/<channel id>/<attachment id>/<filename>``. Since
2024 every such URL carries ``ex`` (expiry, hex Unix seconds), ``is`` (issued at) and ``hm``
(a signature over the rest); an unsigned, altered or expired link answers 404 "This content is
no longer available.". The CDN never asks for the bot token, and the URL holds none; still, a
bot should not hand these URLs to a model (they are bearer links to the user's file).

Here both hosts are the fake's own address (``/attachments/...`` and ``/media/attachments/...``),
the signature is an HMAC with a per-instance secret, links live ``CDN.valid_for`` seconds, and
every fetch is recorded in ``downloads`` (with whether it carried an ``Authorization`` header).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import mimetypes
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

from aiohttp import web

from bot.platform.media import image_size
from bot.testing.discord.wire import JSONDict

__all__ = [
    "CDN",
    "GONE",
    "IS_VOICE_MESSAGE",
    "MAX_ATTACHMENTS",
    "Download",
    "Upload",
    "voice_upload",
]

IS_VOICE_MESSAGE = 1 << 13  # message flag: the one attachment is a voice message
MAX_ATTACHMENTS = 10  # files per message (Discord's limit)
GONE = "This content is no longer available."
_VOICE_FILENAME = "voice-message.ogg"  # what Discord's clients name a recorded voice message


@dataclass(frozen=True, slots=True)
class Upload:
    """A file a user attaches to a message, as the client uploads it.

    ``content_type`` None: guessed from the file name, as Discord does. ``width``/``height``:
    an image's pixels; None: read from a PNG, GIF, JPEG or WebP header, as Discord measures
    them. ``duration_secs`` and
    ``waveform`` make it a voice message's audio (see :func:`voice_upload`).
    """

    filename: str
    data: bytes
    content_type: str | None = None
    width: int | None = None
    height: int | None = None
    description: str | None = None
    duration_secs: float | None = None
    waveform: bytes | None = None

    @property
    def media_type(self) -> str | None:
        if self.content_type is not None:
            return self.content_type
        return mimetypes.guess_type(self.filename)[0]


def voice_upload(data: bytes, duration_secs: float = 3.0, *, samples: int = 32) -> Upload:
    """A voice message's recording as Discord's clients send it: ``voice-message.ogg``,
    ``audio/ogg``, its length and a waveform (one byte per sample, at most 256)."""
    waveform = bytes((i * 37) % 256 for i in range(min(max(samples, 1), 256)))
    return Upload(
        _VOICE_FILENAME, data, "audio/ogg", duration_secs=duration_secs, waveform=waveform
    )


@dataclass(frozen=True, slots=True)
class Download:
    """One fetch from the CDN: the path (no query), the status answered, whether the client
    sent an ``Authorization`` header (a bot must not need one here)."""

    path: str
    status: int
    authorized: bool
    via_proxy: bool


@dataclass(slots=True)
class _Stored:
    data: bytes
    content_type: str | None
    issued: int
    expires: int
    expired: bool = False  # CDN.expire(): as if ``expires`` had passed


@dataclass(slots=True)
class CDN:
    """The attachments users posted, by path; ``base`` is set once the fake listens."""

    base: str | None = None
    valid_for: int = 24 * 3600  # seconds a link stays signed (Discord: about a day)
    downloads: list[Download] = field(default_factory=list)
    waiting: int = 0  # fetches held by ``hold()``
    on_change: Callable[[], None] = lambda: None  # the fake's waits re-check on it
    _gate: asyncio.Event | None = None
    _files: dict[str, _Stored] = field(default_factory=dict)
    _secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def publish(self, channel_id: int, attachment_id: int, upload: Upload) -> JSONDict:
        """Store ``upload``'s bytes and return the Attachment object a message carries."""
        if self.base is None:
            raise RuntimeError("start the fake before posting attachments (their URLs need it)")
        path = f"/attachments/{channel_id}/{attachment_id}/{quote(upload.filename)}"
        issued = int(time.time())
        stored = _Stored(upload.data, upload.media_type, issued, issued + self.valid_for)
        self._files[path] = stored
        query = self._query(path, stored)
        attachment: JSONDict = {
            "id": str(attachment_id),
            "filename": upload.filename,
            "size": len(upload.data),
            "url": f"{self.base}{path}?{query}",
            "proxy_url": f"{self.base}/media{path}?{query}",
        }
        if upload.media_type is not None:
            attachment["content_type"] = upload.media_type
        if upload.description is not None:
            attachment["description"] = upload.description
        size = (upload.width, upload.height)
        if None in size and (upload.media_type or "").startswith("image/"):
            size = image_size(upload.data) or size
        if size[0] is not None and size[1] is not None:
            attachment["width"], attachment["height"] = size
        if upload.duration_secs is not None:
            attachment["duration_secs"] = upload.duration_secs
            attachment["waveform"] = base64.b64encode(upload.waveform or b"\0").decode("ascii")
        return attachment

    def expire(self) -> None:
        """Every link published so far is past its ``ex``: fetches answer 404."""
        for stored in self._files.values():
            stored.expired = True

    def hold(self) -> None:
        """Fetches wait (counted in ``waiting``) until :meth:`release`: a slow CDN."""
        self._gate = asyncio.Event()

    def release(self) -> None:
        gate, self._gate = self._gate, None
        if gate is not None:
            gate.set()

    async def handle(self, request: web.Request) -> web.Response:
        """``GET /attachments/...`` and ``/media/attachments/...``: the bytes, or 404."""
        if self._gate is not None:
            self.waiting += 1
            self.on_change()
            try:
                await self._gate.wait()
            finally:
                self.waiting -= 1
        path = request.rel_url.raw_path  # still %-encoded, as published
        via_proxy = path.startswith("/media/")
        if via_proxy:
            path = path[len("/media") :]
        stored = self._files.get(path)
        ok = stored is not None and self._valid(path, stored, request)
        status = 200 if ok else 404
        authorized = "Authorization" in request.headers
        self.downloads.append(Download(path, status, authorized, via_proxy))
        self.on_change()
        if not ok or stored is None:
            return web.Response(status=404, text=GONE)
        return web.Response(
            body=stored.data, content_type=stored.content_type or "application/octet-stream"
        )

    def _query(self, path: str, stored: _Stored) -> str:
        ex, is_ = f"{stored.expires:x}", f"{stored.issued:x}"
        return f"ex={ex}&is={is_}&hm={self._sign(path, ex, is_)}&"

    def _sign(self, path: str, ex: str, is_: str) -> str:
        message = f"{path}|{ex}|{is_}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def _valid(self, path: str, stored: _Stored, request: web.Request) -> bool:
        ex, is_, hm = (request.query.get(k, "") for k in ("ex", "is", "hm"))
        expected = self._sign(path, ex, is_)
        if not hmac.compare_digest(hm, expected):
            return False
        try:
            expires = int(ex, 16)
        except ValueError:
            return False
        return expires == stored.expires and not stored.expired and expires >= time.time()
