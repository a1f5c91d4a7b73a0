"""Files posted as ``multipart/form-data``, read as they arrive, never past a size cap.

aiohttp's ``request.post()`` holds a whole form (up to ``http.max_body_bytes``) before a
handler sees it; a route that takes documents registers itself here instead
(:func:`add_streamed_post`), and reads its form part by part with :func:`read_upload`: a
``Content-Length`` already past the cap is refused before a byte of the body is read, and a
file that grows past it while streaming is refused when it does.

A dashboard form still carries the CSRF field, as every form does, but as its *first* field
(a browser sends fields in the page's order): the guard reads only that part
(:func:`form_csrf`) and leaves the rest of the stream to the handler. A form whose first field
is not ``csrf`` is refused like one without the token.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import BodyPartReader, MultipartReader, web

__all__ = [
    "FORM_SLACK",
    "Refused",
    "Upload",
    "add_streamed_post",
    "form_csrf",
    "is_streamed",
    "read_upload",
]

FORM_SLACK = 16_384  # bytes a form may hold besides its file: boundaries, headers, small fields
FIELD_BYTES = 1_024  # the most a text field (a source name, the CSRF token) may hold
MAX_FIELDS = 8  # text fields a form may carry (a chunked body has no length to check first)
MULTIPART = "multipart/form-data"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
STREAMED: web.AppKey[set[web.AbstractRoute]] = web.AppKey("parlour_streamed_forms")
_READER = web.RequestKey("parlour_form_reader", MultipartReader)


@dataclass(frozen=True, slots=True)
class Refused:
    """A form the route cannot take, and how to answer it (a value, never raised)."""

    status: int  # 400, 413 or 415
    code: str  # the API's error code
    message: str


def _bad(message: str) -> Refused:
    return Refused(400, "invalid_parameter", message)


@dataclass(frozen=True, slots=True)
class Upload:
    filename: str  # as the client named the file ('' when it did not)
    fields: dict[str, str]  # the form's text fields (the CSRF token excluded)
    data: bytes


def add_streamed_post(web_app: web.Application, path: str, handler: Handler) -> None:
    """``POST path``, whose form the handler streams (:func:`read_upload`)."""
    route = web_app.router.add_post(path, handler)
    if STREAMED not in web_app:
        web_app[STREAMED] = set()
    web_app[STREAMED].add(route)


def is_streamed(request: web.Request) -> bool:
    return request.match_info.route in request.app.get(STREAMED, set())


async def form_csrf(request: web.Request) -> str | None:
    """The ``csrf`` field of a streamed form: its first part, read alone (None: not there).
    The handler's :func:`read_upload` goes on from the second part."""
    if request.content_type != MULTIPART:
        return None
    try:
        reader = await request.multipart()
        part = await reader.next()
        if not isinstance(part, BodyPartReader) or part.name != "csrf" or part.filename:
            return None
        value = await _text(part)
    except (ValueError, AssertionError):  # a malformed form: no token found in it
        return None
    if isinstance(value, Refused):
        return None
    request[_READER] = reader
    return value or None


async def read_upload(
    request: web.Request, max_bytes: int, *, limit_name: str, name: str = "file"
) -> Upload | Refused:
    """The form's file field ``name`` (at most ``max_bytes``, the setting ``limit_name``) and
    its text fields; or why not: 415 not a multipart form, 413 a file over ``max_bytes``
    (before the body is read when its length says so), 400 a malformed form, no file, or a
    field that is too long or not UTF-8."""
    if request.content_type != MULTIPART:
        return Refused(415, "unsupported_media_type", f"send {MULTIPART} with a {name} field")
    length = request.content_length
    if length is not None and length > max_bytes + FORM_SLACK:
        return Refused(413, "too_large", _too_large(max_bytes, limit_name, length))
    try:
        reader = request.get(_READER)
        if reader is None:  # a Bearer caller's form: the guard read nothing of it
            reader = await request.multipart()
        return await _parts(reader, max_bytes, limit_name, name)
    except ValueError as exc:  # aiohttp's word for a malformed multipart body
        return _bad(f"a malformed form: {exc}")


async def _parts(
    reader: MultipartReader, max_bytes: int, limit_name: str, name: str
) -> Upload | Refused:
    filename, fields, data = "", dict[str, str](), None
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader):
            return _bad("a nested multipart body")
        if part.name is None:
            return _bad("a form field without a name")
        if part.name == name:
            if data is not None:
                return _bad(f"one {name} field only")
            filename = part.filename or ""
            read = await _file(part, max_bytes, limit_name)
            if isinstance(read, Refused):
                return read
            data = read
        elif part.filename is None:
            if len(fields) >= MAX_FIELDS:
                return _bad(f"more than {MAX_FIELDS} form fields")
            text = await _text(part)
            if isinstance(text, Refused):
                return text
            fields[part.name] = text
        else:
            return _bad(f"unexpected file field {part.name!r}")
    if data is None:
        return _bad(f"the form has no {name} field with a file")
    fields.pop("csrf", None)
    return Upload(filename, fields, data)


async def _file(part: BodyPartReader, max_bytes: int, limit_name: str) -> bytes | Refused:
    data = bytearray()
    while chunk := await part.read_chunk(65_536):
        data += chunk
        if len(data) > max_bytes:
            return Refused(413, "too_large", _too_large(max_bytes, limit_name))
    return bytes(data)


async def _text(part: BodyPartReader) -> str | Refused:
    data = bytearray()
    while chunk := await part.read_chunk(FIELD_BYTES):
        data += chunk
        if len(data) > FIELD_BYTES:
            return _bad(f"{part.name!r} is too long")
    try:
        return data.decode()
    except UnicodeDecodeError:
        return _bad(f"{part.name!r} is not UTF-8")


def _too_large(max_bytes: int, limit_name: str, length: int | None = None) -> str:
    sent = f"; {length:,} bytes were sent" if length is not None else ""
    return f"the file is over the limit of {max_bytes:,} bytes ({limit_name}){sent}"
