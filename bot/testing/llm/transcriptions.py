"""The fake server's ``/v1/audio/transcriptions``: the multipart form, its checks, the answer.

The request is ``multipart/form-data`` with ``file`` (the audio, named with its format's
extension) and ``model``, optionally ``language``, ``prompt``, ``response_format`` and
``temperature``, as OpenAI's API takes it. Failures answer like the real API: 400 for a
missing field or a file whose name has no supported audio extension, 413 past 25 MB. A valid
request gets the next scripted transcript (``FakeLLM.script_transcriptions``), else
:func:`default_transcript` of the bytes, in the asked ``response_format`` (``json``, ``text``,
``verbose_json``, ``srt``, ``vtt``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from typing import Any

from bot.testing.llm.errors import Invalid, bad_value, fail, missing
from bot.testing.llm.wire import ApiError, JSONDict

__all__ = [
    "MAX_AUDIO_BYTES",
    "Upload",
    "default_transcript",
    "parse_form",
    "transcription_body",
    "validate_transcription",
]

MAX_AUDIO_BYTES = 25 * 1024 * 1024  # the real endpoint's limit
FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
AUDIO_EXTENSIONS = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")


@dataclass(frozen=True, slots=True)
class Upload:
    """One file field of a multipart form as received."""

    filename: str
    content_type: str
    data: bytes


def parse_form(content_type: str, body: bytes) -> tuple[dict[str, str], dict[str, Upload]]:
    """``(fields, files)`` of a ``multipart/form-data`` body; both empty when it is not one."""
    if not content_type.lower().startswith("multipart/form-data"):
        return {}, {}
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    parsed = BytesParser(policy=policy.HTTP).parsebytes(head + body)
    fields: dict[str, str] = {}
    files: dict[str, Upload] = {}
    if not isinstance(parsed, EmailMessage) or not parsed.is_multipart():
        return fields, files
    for part in parsed.iter_parts():
        if not isinstance(part, EmailMessage):
            continue
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        raw = part.get_payload(decode=True)
        data = raw if isinstance(raw, bytes) else b""
        filename = part.get_filename()
        if filename is not None:
            files[name] = Upload(filename, part.get_content_type(), data)
        else:
            fields[name] = data.decode("utf-8", "replace")
    return fields, files


def validate_transcription(
    fields: dict[str, str], files: dict[str, Upload], size: int
) -> ApiError | None:
    """The real API's answer to a bad request, or None when it is fine. ``size``: the body's
    bytes (the cap is on what arrived)."""
    try:
        _check(fields, files, size)
    except Invalid as exc:
        return exc.error
    return None


def _check(fields: dict[str, str], files: dict[str, Upload], size: int) -> None:
    if size > MAX_AUDIO_BYTES:
        raise Invalid(
            ApiError(
                413,
                f"Maximum content size limit ({MAX_AUDIO_BYTES}) exceeded ({size} bytes read)",
                type="server_error",
            )
        )
    upload = files.get("file")
    if upload is None:
        raise missing(("file",))
    if not fields.get("model"):
        raise missing(("model",))
    extension = upload.filename.rpartition(".")[2].lower() if "." in upload.filename else ""
    if extension not in AUDIO_EXTENSIONS:
        listed = ", ".join(f"'{e}'" for e in AUDIO_EXTENSIONS)
        raise fail(f"Invalid file format. Supported formats: [{listed}]", None, None)
    if not upload.data:
        raise fail("Audio file is too short. Minimum audio length is 0.1 seconds.", ("file",), None)
    response_format = fields.get("response_format", "json")
    if response_format not in FORMATS:
        raise bad_value(("response_format",), response_format, FORMATS)
    temperature = fields.get("temperature")
    if temperature is not None:
        try:
            value = float(temperature)
        except ValueError:
            value = -1.0
        if not 0 <= value <= 1:
            raise fail(
                f"Invalid 'temperature': decimal above or below the range 0 to 1 "
                f"({temperature!r}).",
                ("temperature",),
                "invalid_value",
            )


def default_transcript(audio: bytes) -> str:
    """What the fake hears when no transcript is scripted: deterministic per audio bytes."""
    digest = hashlib.blake2b(audio, digest_size=4).hexdigest()
    return f"fake transcript of {len(audio)} bytes ({digest})"


def transcription_body(text: str, fields: dict[str, str]) -> tuple[str, JSONDict | str]:
    """``(content type, body)`` in the request's ``response_format``."""
    response_format = fields.get("response_format", "json")
    if response_format == "text":
        return "text/plain", text + "\n"
    if response_format == "srt":
        return "text/plain", f"1\n00:00:00,000 --> 00:00:01,000\n{text}\n\n"
    if response_format == "vtt":
        return "text/vtt", f"WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n{text}\n\n"
    if response_format == "verbose_json":
        body: dict[str, Any] = {
            "task": "transcribe",
            "language": fields.get("language") or "english",
            "duration": 1.0,
            "text": text,
            "segments": [],
        }
        return "application/json", body
    return "application/json", {"text": text}
