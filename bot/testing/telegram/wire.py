"""Bot API wire formats for the fake Telegram server: request decoding, errors, responses.

Kept apart from the server so every client style lands in one place: aiogram posts
multipart or urlencoded forms with nested objects JSON-encoded as strings, other libraries
post JSON bodies, and curl users send GET query strings. All of them decode to one dict.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

JSONDict = dict[str, Any]

__all__ = [
    "ApiCall",
    "ApiError",
    "JSONDict",
    "bad_request",
    "decode_json_fields",
    "error_response",
    "get_bool",
    "get_int",
    "get_str",
    "ok_response",
    "read_params",
]

# Parameters whose value is a JSON-serialized object or array in the Bot API.
JSON_FIELDS = frozenset(
    {
        "reply_markup", "entities", "caption_entities", "reply_parameters",
        "link_preview_options", "allowed_updates", "commands", "scope", "message_ids",
        "media", "results", "permissions", "reaction", "options", "suggested_post_parameters",
    }
)  # fmt: skip
_INT_RE = re.compile(r"-?\d+")


class ApiError(Exception):
    """A Bot API failure: becomes ``{"ok": false, "error_code", "description", "parameters"}``."""

    def __init__(self, status: int, description: str, parameters: JSONDict | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters

    def body(self) -> JSONDict:
        body: JSONDict = {"ok": False, "error_code": self.status, "description": self.description}
        if self.parameters:
            body["parameters"] = self.parameters
        return body


def bad_request(message: str, parameters: JSONDict | None = None) -> ApiError:
    """A 400 with the ``Bad Request: `` prefix the real server puts on every 400."""
    return ApiError(400, f"Bad Request: {message}", parameters)


@dataclass(slots=True)
class ApiCall:
    """One Bot API call as the fake saw it.

    ``method`` is the canonical name (``sendMessage``) whatever case the client used;
    ``params`` has JSON-string fields decoded; ``at`` is ``time.monotonic()`` on arrival;
    ``error`` is the failure description, None when the call succeeded.
    """

    method: str
    params: JSONDict
    at: float = field(default_factory=time.monotonic)
    ok: bool = True
    error: str | None = None

    def as_json(self) -> JSONDict:
        return {
            "method": self.method,
            "params": self.params,
            "at": self.at,
            "ok": self.ok,
            "error": self.error,
        }


async def read_params(request: web.Request) -> JSONDict:
    """Query string, then the body (JSON, urlencoded or multipart), JSON fields decoded."""
    params: JSONDict = dict(request.query)
    if request.method == "POST" and request.can_read_body:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except ValueError:
                raise bad_request("can't parse JSON encoded request") from None
            if not isinstance(body, dict):
                raise bad_request("JSON encoded request must be an object")
            params.update(body)
        else:
            form = await request.post()
            for key, value in form.items():
                if isinstance(value, web.FileField):
                    params.setdefault(key, {"file": value.filename})
                else:
                    params.setdefault(key, value)
    return decode_json_fields(params)


def decode_json_fields(params: JSONDict) -> JSONDict:
    """Decode the parameters the Bot API defines as JSON-serialized, when sent as strings."""
    for name in JSON_FIELDS & params.keys():
        raw = params[name]
        if isinstance(raw, str | bytes):
            try:
                params[name] = json.loads(raw)
            except ValueError:
                what = "reply keyboard markup" if name == "reply_markup" else name
                raise bad_request(f"can't parse {what} JSON object") from None
    return params


def get_str(params: JSONDict, name: str) -> str | None:
    """A string parameter; numbers and booleans arrive as their JSON text, like on the wire."""
    value = params.get(name)
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def get_int(params: JSONDict, name: str, error: str | None = None) -> int | None:
    """An integer parameter, None when absent; unparsable raises ``error`` (a 400)."""
    value = params.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT_RE.fullmatch(value.strip()):
        return int(value)
    raise bad_request(error or f"invalid {name} specified")


def get_bool(params: JSONDict, name: str) -> bool:
    """A boolean parameter: ``true``/``1`` in any case, or a JSON boolean."""
    value = params.get(name)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1")
    return bool(value)


def ok_response(result: Any, description: str | None = None) -> web.Response:
    body: JSONDict = {"ok": True, "result": result}
    if description is not None:
        body["description"] = description
    return web.Response(body=json.dumps(body).encode(), content_type="application/json")


def error_response(error: ApiError) -> web.Response:
    headers = {}
    retry_after = (error.parameters or {}).get("retry_after")
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return web.Response(
        status=error.status,
        body=json.dumps(error.body()).encode(),
        content_type="application/json",
        headers=headers,
    )
