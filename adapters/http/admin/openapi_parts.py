"""The small builders the OpenAPI document is written with (:mod:`adapters.http.admin.openapi`):
references, responses, parameters, and an admin operation with its usual errors."""

from __future__ import annotations

from typing import Any

__all__ = [
    "API_ERRORS",
    "CHAT_ERRORS",
    "CHAT_KEY",
    "JSON",
    "REF_TEMPLATE",
    "admin",
    "error",
    "json_of",
    "list_of",
    "ok",
    "path_param",
    "query",
    "ref",
]

REF_TEMPLATE = "#/components/schemas/{model}"
JSON = dict[str, Any]


def ref(name: str) -> JSON:
    return {"$ref": REF_TEMPLATE.format(model=name)}


def ok(name: str | None, description: str = "OK", media: str = "application/json") -> JSON:
    if name is None:
        return {"description": description}
    return {"description": description, "content": {media: {"schema": ref(name)}}}


def error(description: str, *, chat: bool = False) -> JSON:
    return ok("ChatError" if chat else "ErrorBody", description)


API_ERRORS = {
    "401": error("no valid token or session"),
    "403": error("a chat token, or a session request without its CSRF token"),
    "429": error("too many wrong tokens from this address (see Retry-After)"),
}
CHAT_ERRORS = {
    "401": error("no valid chat or admin token", chat=True),
    "429": error("too many wrong tokens, or a limit of the bot", chat=True),
}


def query(name: str, description: str, kind: str = "string", **extra: Any) -> JSON:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": {"type": kind, **extra},
    }


def path_param(name: str, description: str) -> JSON:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string"},
    }


def admin(summary: str, response: JSON, *, params: list[JSON] | None = None, **more: Any) -> JSON:
    operation: JSON = {
        "summary": summary,
        "tags": ["admin"],
        "security": [{"bearer": []}, {"session": []}],
        "responses": {"200": response, **API_ERRORS, **more.pop("errors", {})},
    }
    if params:
        operation["parameters"] = params
    operation.update(more)
    return operation


CHAT_KEY = path_param("chat_key", "the chat's key, e.g. telegram:-100123 (URL-encoded)")


def json_of(schema: JSON, text: str = "OK") -> JSON:
    return {"description": text, "content": {"application/json": {"schema": schema}}}


def list_of(name: str) -> JSON:
    return {"type": "array", "items": ref(name)}
