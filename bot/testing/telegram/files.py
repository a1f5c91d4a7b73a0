"""Files in the fake Telegram: users send photos, documents, voice notes and audio; the bot
fetches them with ``getFile`` and ``GET /file/bot<token>/<file_path>``, as with the real API.

A test puts bytes into a message (``send_photo``, ``send_document``, ``send_voice``,
``send_audio``); each file gets a ``file_id``/``file_unique_id`` and, once asked for with
``getFile``, a ``file_path`` valid for the download route. Like Telegram, ``getFile`` refuses a
file over 20 MB (``file is too big``) and an unknown id (``invalid file_id``); the download
route needs the bot's token in its path. ``downloads`` lists the paths served, in order;
``fail("download", status, description)`` makes the next download fail.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from aiohttp import web

from bot.testing.telegram.state import TelegramState
from bot.testing.telegram.wire import ApiCall, ApiError, JSONDict, bad_request, get_str

__all__ = ["MAX_DOWNLOAD_BYTES", "FakeFile", "TelegramFiles"]

MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024  # what getFile serves to bots
_FOLDERS = {"photo": "photos", "document": "documents", "voice": "voice", "audio": "music"}


@dataclass(slots=True)
class FakeFile:
    file_id: str
    file_unique_id: str
    data: bytes
    folder: str
    extension: str
    file_path: str | None = None  # set by the first getFile

    def json(self) -> JSONDict:
        return {
            "file_id": self.file_id,
            "file_unique_id": self.file_unique_id,
            "file_size": len(self.data),
        }


class TelegramFiles(TelegramState):
    """The file store, ``getFile``, the download route and the ``send_<media>`` controls."""

    def __init__(
        self,
        token: str = "123456:TEST-fake-token",
        bot_username: str = "parlour_bot",
        bot_name: str = "Parlour",
        privacy_mode: bool = True,
    ) -> None:
        super().__init__(token, bot_username, bot_name, privacy_mode)
        self.files: dict[str, FakeFile] = {}
        self.downloads: list[str] = []
        self._file_numbers = itertools.count()
        self._path_numbers = itertools.count()

    def add_file(self, data: bytes, kind: str, extension: str) -> FakeFile:
        """Store ``data`` as a file of ``kind`` (photo, document, voice, audio)."""
        files = self.files
        number = next(self._file_numbers)
        digest = hashlib.sha256(data + str(number).encode()).hexdigest()
        stored = FakeFile(
            file_id=f"BQACAgIAAxkBAAI{digest[:32]}",
            file_unique_id=f"AgAD{digest[32:44]}",
            data=data,
            folder=_FOLDERS.get(kind, "documents"),
            extension=extension,
        )
        files[stored.file_id] = stored
        return stored

    # -- acting as users ---------------------------------------------------------------

    def send_photo(
        self,
        chat: JSONDict,
        user: JSONDict,
        data: bytes,
        caption: str = "",
        *,
        width: int = 1280,
        height: int = 960,
        thumbnails: Sequence[bytes] = (),
        **send: object,
    ) -> JSONDict:
        """A user sends a photo: ``data`` is its largest size (``width`` x ``height``), each of
        ``thumbnails`` a smaller one (listed first, smallest first, as Telegram does)."""
        sizes: list[JSONDict] = []
        count = len(thumbnails)
        for index, thumb in enumerate(thumbnails):
            scale = 2 ** (count - index)
            entry = self.add_file(thumb, "photo", "jpg").json()
            sizes.append(entry | {"width": width // scale, "height": height // scale})
        sizes.append(
            self.add_file(data, "photo", "jpg").json() | {"width": width, "height": height}
        )
        return self._send_media(chat, user, caption, {"photo": sizes}, send)

    def send_document(
        self,
        chat: JSONDict,
        user: JSONDict,
        data: bytes,
        file_name: str,
        mime_type: str,
        caption: str = "",
        **send: object,
    ) -> JSONDict:
        extension = file_name.rpartition(".")[2] if "." in file_name else "bin"
        document = self.add_file(data, "document", extension).json()
        document |= {"file_name": file_name, "mime_type": mime_type}
        return self._send_media(chat, user, caption, {"document": document}, send)

    def send_voice(
        self,
        chat: JSONDict,
        user: JSONDict,
        data: bytes,
        *,
        duration: int = 3,
        mime_type: str = "audio/ogg",
        caption: str = "",
        **send: object,
    ) -> JSONDict:
        voice = self.add_file(data, "voice", "oga").json()
        voice |= {"duration": duration, "mime_type": mime_type}
        return self._send_media(chat, user, caption, {"voice": voice}, send)

    def send_audio(
        self,
        chat: JSONDict,
        user: JSONDict,
        data: bytes,
        *,
        file_name: str = "audio.mp3",
        mime_type: str = "audio/mpeg",
        duration: int = 30,
        caption: str = "",
        **send: object,
    ) -> JSONDict:
        audio = self.add_file(data, "audio", file_name.rpartition(".")[2] or "mp3").json()
        audio |= {"duration": duration, "mime_type": mime_type, "file_name": file_name}
        return self._send_media(chat, user, caption, {"audio": audio}, send)

    def _send_media(
        self, chat: JSONDict, user: JSONDict, caption: str, media: JSONDict, send: dict[str, object]
    ) -> JSONDict:
        return self.send(chat, user, caption, media=media, **send)  # type: ignore[arg-type]

    # -- the Bot API -------------------------------------------------------------------

    def _get_file(self, params: JSONDict, call: ApiCall) -> JSONDict:
        file_id = get_str(params, "file_id")
        if not file_id:
            raise bad_request("file_id is empty")
        stored = self.files.get(file_id)
        if stored is None:
            raise bad_request("invalid file_id")
        if len(stored.data) > MAX_DOWNLOAD_BYTES:
            raise bad_request("file is too big")
        if stored.file_path is None:
            number = next(self._path_numbers)
            stored.file_path = f"{stored.folder}/file_{number}.{stored.extension}"
        return stored.json() | {"file_path": stored.file_path}

    async def _serve_file(self, request: web.Request) -> web.Response:
        """``GET /file/bot<token>/<file_path>``: the bytes of a file ``getFile`` described."""
        if request.match_info["token"] != self.token:
            return _error(ApiError(401, "Unauthorized"))
        injected = self._injected.get("download")  # fail("download", 404, "Not Found")
        if injected:
            return _error(injected.popleft())
        path = request.match_info["path"]
        found = next((f for f in self.files.values() if f.file_path == path), None)
        if found is None:
            return _error(ApiError(404, "Not Found"))
        self.downloads.append(path)
        return web.Response(body=found.data, content_type="application/octet-stream")


def _error(error: ApiError) -> web.Response:
    return web.json_response(error.body(), status=error.status)
