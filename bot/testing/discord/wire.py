"""Discord wire basics for the fake Discord server: errors, responses, snowflakes, timestamps.

Kept apart so every handler answers the way discord.py expects: it only parses a body as
JSON when ``Content-Type`` is exactly ``application/json``, and it turns Discord's error body
``{"message", "code", "errors"}`` into ``HTTPException.code`` / ``.text``. Bots branch on
those codes (10008 Unknown Message, 40060 already acknowledged, 50035 Invalid Form Body), so
they come from one table here.
"""

from __future__ import annotations

import datetime
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

JSONDict = dict[str, Any]

__all__ = [
    "DISCORD_EPOCH_MS",
    "Call",
    "DiscordError",
    "JSONDict",
    "RecordedRequest",
    "Snowflakes",
    "field_error",
    "invalid_form",
    "iso",
    "json_response",
    "merge_errors",
    "no_content",
    "unknown",
]

DISCORD_EPOCH_MS = 1_420_070_400_000

# Discord's "Unknown X" error codes (JSON error codes table of the API docs).
UNKNOWN_CODES = {
    "Account": 10001,
    "Application": 10002,
    "Channel": 10003,
    "Guild": 10004,
    "Member": 10007,
    "Message": 10008,
    "Role": 10011,
    "User": 10013,
    "Emoji": 10014,
    "Webhook": 10015,
    "interaction": 10062,
    "application command": 10063,
}


class DiscordError(Exception):
    """A failed request: becomes ``{"message": ..., "code": ...[, "errors": ...]}``.

    ``headers`` are added to the response (rate-limit headers on a 429).
    """

    def __init__(
        self,
        status: int,
        message: str,
        code: int | None = 0,
        errors: JSONDict | None = None,
        *,
        extra: JSONDict | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {message} (code {code})")
        self.status = status
        self.message = message
        self.code = code
        self.errors = errors
        self.extra = extra
        self.headers = headers or {}

    def body(self) -> JSONDict:
        body: JSONDict = {"message": self.message}
        if self.code is not None:  # a 429's body has no code
            body["code"] = self.code
        if self.errors:
            body["errors"] = self.errors
        if self.extra:
            body.update(self.extra)
        return body

    def response(self) -> web.Response:
        return json_response(self.body(), self.status, self.headers)


def unknown(what: str) -> DiscordError:
    """404 ``Unknown <what>`` with Discord's code: ``unknown("Channel")`` is 10003."""
    return DiscordError(404, f"Unknown {what}", UNKNOWN_CODES[what])


def field_error(path: tuple[str | int, ...], code: str, message: str) -> JSONDict:
    """One nested ``errors`` entry, e.g. ``("content",)`` ->
    ``{"content": {"_errors": [{"code": ..., "message": ...}]}}``."""
    node: JSONDict = {"_errors": [{"code": code, "message": message}]}
    for key in reversed(path):
        node = {str(key): node}
    return node


def merge_errors(target: JSONDict, more: JSONDict) -> JSONDict:
    """Deep-merge ``errors`` trees so one response can report every invalid field."""
    for key, value in more.items():
        if key == "_errors":
            target.setdefault("_errors", []).extend(value)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge_errors(target[key], value)
        else:
            target[key] = value
    return target


def invalid_form(errors: JSONDict) -> DiscordError:
    """400 ``Invalid Form Body`` (50035) with the field errors, as Discord validates bodies."""
    return DiscordError(400, "Invalid Form Body", 50035, errors)


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """A JSON response whose ``Content-Type`` is exactly ``application/json`` (no charset):
    discord.py compares the header verbatim and treats anything else as text."""
    return web.Response(
        status=status,
        body=json.dumps(body, separators=(",", ":")).encode(),
        content_type="application/json",
        headers=headers,
    )


def no_content(headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=204, headers=headers)


def iso(at: float | None = None) -> str:
    """An ISO 8601 timestamp like Discord's (``2024-05-01T12:00:00.123000+00:00``)."""
    moment = datetime.datetime.fromtimestamp(time.time() if at is None else at, datetime.UTC)
    return moment.isoformat(timespec="microseconds")


class Snowflakes:
    """Time-based snowflake ids: discord.py derives ``created_at`` (and an interaction's
    expiry) from them, so they must encode the real current time."""

    def __init__(self, worker: int = 1) -> None:
        self._worker = worker & 0x3FF
        self._increment = itertools.count()
        self._last = 0

    def next(self) -> int:
        ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
        flake = (ms << 22) | (self._worker << 12) | (next(self._increment) & 0xFFF)
        # Strictly increasing even within one millisecond, so sort order is creation order.
        self._last = max(self._last + 1, flake)
        return self._last


@dataclass(slots=True)
class Call:
    """A decoded REST request handed to a route handler: path parameters by template name,
    query string, JSON body (``payload_json`` of a multipart one) and uploaded files."""

    method: str
    path: str
    params: dict[str, str]
    query: dict[str, str]
    body: Any
    files: list[tuple[str, int]] = field(default_factory=list)

    def id(self, name: str) -> int:
        """A numeric path parameter; a non-snowflake gives the 404 Discord gives."""
        value = self.params[name]
        if not value.isdigit() or len(value) > 20:
            raise DiscordError(404, "404: Not Found", 0)
        return int(value)

    def flag(self, name: str) -> bool:
        """A boolean query parameter (``true``/``1``)."""
        return self.query.get(name, "").lower() in ("1", "true")

    def object(self) -> JSONDict:
        """The body as a JSON object; a missing body is an empty one."""
        if self.body is None:
            return {}
        if not isinstance(self.body, dict):
            raise invalid_form(
                field_error((), "DICT_TYPE_CONVERT", "Only dictionaries may be used.")
            )
        return self.body


@dataclass(slots=True)
class RecordedRequest:
    """One REST request as the fake saw it.

    ``path`` is relative to the API base (``/channels/1/messages``), ``route`` the matched
    template (``POST /channels/{channel_id}/messages``, or None for unknown routes), ``json``
    the decoded body (``payload_json`` for multipart), ``query`` the query string, ``status``
    the answer and ``error`` its Discord error code when it failed; ``at`` is monotonic.
    """

    method: str
    path: str
    route: str | None
    json: Any
    query: dict[str, str]
    status: int = 0
    error: int | None = None
    at: float = field(default_factory=time.monotonic)

    def as_json(self) -> JSONDict:
        return {
            "method": self.method,
            "path": self.path,
            "route": self.route,
            "json": self.json,
            "query": self.query,
            "status": self.status,
            "error": self.error,
            "at": self.at,
        }
