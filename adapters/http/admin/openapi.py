"""``GET /api/openapi.json``: the OpenAPI 3.1 document of every API route.

Response bodies come from the pydantic models the handlers serialise
(:mod:`adapters.http.admin.schemas`) and from the storage's own value classes (a chat, a history
item), so the document follows the code; ``tests/product/http/test_http_admin_api.py`` checks
that every route under ``/api``, ``/v1`` and ``/metrics`` the server has is described here.
"""

from __future__ import annotations

from functools import cache

from aiohttp import web

from adapters.http.admin import schemas
from adapters.http.admin.openapi_catchup import CATCHUP_MODELS, catchup_routes
from adapters.http.admin.openapi_knowledge import KNOWLEDGE_MODELS, knowledge_routes
from adapters.http.admin.openapi_parts import (
    API_ERRORS,
    CHAT_ERRORS,
    CHAT_KEY,
    JSON,
    REF_TEMPLATE,
    admin,
    error,
    json_of,
    list_of,
    ok,
    path_param,
    query,
    ref,
)
from adapters.http.admin.openapi_schedules import SCHEDULE_MODELS, schedule_routes
from adapters.http.admin.openapi_shapes import SETTINGS_BODY, SHAPES
from adapters.http.context import HTTPContext

__all__ = ["add_routes", "document"]


_MODELS: tuple[type[schemas.Body], ...] = (
    schemas.ErrorBody,
    schemas.UsageReport,
    schemas.PluginList,
    schemas.MCPList,
    schemas.ReminderList,
    *KNOWLEDGE_MODELS,
    *CATCHUP_MODELS,
    *SCHEDULE_MODELS,
)


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    web_app.router.add_get("/api/openapi.json", serve)


async def serve(request: web.Request) -> web.Response:
    return web.json_response(document())


def _chat_routes() -> JSON:
    """The chat store's routes (:mod:`adapters.http.admin.chats`)."""
    not_found = {"404": error("no such chat")}
    listed = {
        "type": "object",
        "properties": {
            "chats": list_of("ChatSummary"),
            "limit": {"type": "integer"},
            "offset": {"type": "integer"},
        },
    }
    page = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": ref("HistoryItem")},
            "next_before": {"type": ["integer", "null"], "description": "for the next page"},
        },
    }
    loose = {"type": "object", "additionalProperties": True}
    trail = {"type": "object", "properties": {"entries": list_of("AuditEntry")}}
    kept = {"type": "object", "properties": {"memories": list_of("MemoryItem")}}
    changed = {
        "allOf": [ref("ChatSummary")],
        "properties": {
            "changed": {
                "type": "array",
                "items": {"type": "string", "enum": ["scope", "persona"]},
                "description": "empty when every value was already in effect",
            }
        },
    }
    return {
        "/api/chats": {
            "get": admin(
                "Every chat the bot knows (a cleared one too), newest activity first",
                json_of(listed),
                params=[
                    query("q", "matches the title or the chat key"),
                    query("limit", "at most this many", "integer", minimum=1, maximum=500),
                    query("offset", "skip this many", "integer", minimum=0),
                ],
            )
        },
        "/api/chats/{chat_key}": {
            "parameters": [CHAT_KEY],
            "get": admin(
                "One chat: platform, title, scope, persona, last activity, turn counts",
                json_of(ref("ChatSummary")),
                errors=not_found,
            ),
        },
        "/api/chats/{chat_key}/history": {
            "parameters": [CHAT_KEY],
            "get": admin(
                "A page of the chat's history, newest first",
                json_of(page),
                params=[
                    query("before", "only turns with an id below this", "integer"),
                    query("limit", "at most this many", "integer", minimum=1, maximum=200),
                ],
                errors=not_found,
            ),
        },
        "/api/chats/{chat_key}/clear": {
            "parameters": [CHAT_KEY],
            "post": admin(
                "Delete the chat's history (audited with the token's name)",
                json_of(loose),
                errors=not_found,
            ),
        },
        "/api/chats/{chat_key}/reset": {
            "parameters": [CHAT_KEY],
            "post": admin(
                "Start the chat's conversations afresh (history kept; audited)",
                json_of(loose),
                errors=not_found,
            ),
        },
        "/api/chats/{chat_key}/settings": {
            "parameters": [CHAT_KEY],
            "patch": admin(
                "Change the chat's scope and/or persona (as /scope and /persona; audited)",
                json_of(changed, "the chat after the change, and what changed"),
                requestBody={
                    "required": True,
                    "content": {"application/json": {"schema": SETTINGS_BODY}},
                },
                errors={**not_found, "400": error("a bad body, or a value the chat refuses")},
            ),
        },
        "/api/chats/{chat_key}/audit": {
            "parameters": [CHAT_KEY],
            "get": admin("The chat's audit trail, newest first", json_of(trail)),
        },
        "/api/chats/{chat_key}/memories": {
            "parameters": [CHAT_KEY],
            "get": admin(
                "The memories kept for the chat, newest first (404 when memory is off)",
                json_of(kept),
            ),
        },
        "/api/chats/{chat_key}/memories/{id}": {
            "parameters": [CHAT_KEY, path_param("id", "the memory's id")],
            "delete": {
                **admin("Forget one memory", {"description": "unused"}),
                "responses": {
                    "204": {"description": "deleted"},
                    **API_ERRORS,
                    "404": error("no such memory in this chat"),
                },
            },
        },
    }


def _chat_endpoint() -> JSON:
    request = {
        "type": "object",
        "required": ["messages"],
        "properties": {
            "model": {"type": "string", "description": "any; the bot answers as itself (parlour)"},
            "messages": {
                "type": "array",
                "description": "OpenAI messages; only the newest user message is the input",
                "items": {"type": "object"},
            },
            "stream": {"type": "boolean", "default": False},
            "user": {"type": "string", "description": "whose conversation (platform http)"},
        },
    }
    completion = {"type": "object", "description": "an OpenAI chat.completion object"}
    return {
        "/v1/chat/completions": {
            "post": {
                "summary": "Chat with the bot (OpenAI-compatible; stream: SSE chunks)",
                "tags": ["chat"],
                "security": [{"bearer": []}],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": request}},
                },
                "responses": {
                    "200": {
                        "description": "the answer (or, streamed, chat.completion.chunk events)",
                        "content": {
                            "application/json": {"schema": completion},
                            "text/event-stream": {"schema": {"type": "string"}},
                        },
                    },
                    "400": error("a malformed request", chat=True),
                    **CHAT_ERRORS,
                },
            }
        },
        "/v1/models/{model}": {
            "parameters": [path_param("model", "parlour")],
            "get": {
                "summary": "One model (only parlour exists)",
                "tags": ["chat"],
                "security": [{"bearer": []}],
                "responses": {
                    "200": {
                        "description": "an OpenAI model object",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    "404": error("no such model", chat=True),
                    **CHAT_ERRORS,
                },
            },
        },
        "/v1/models": {
            "get": {
                "summary": "The one model: parlour",
                "tags": ["chat"],
                "security": [{"bearer": []}],
                "responses": {
                    "200": {
                        "description": "an OpenAI model list",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    },
                    **CHAT_ERRORS,
                },
            }
        },
    }


def _admin_routes() -> JSON:
    job_id = path_param("id", "the reminder's id as listed (reminders:42)")
    return {
        "/api/usage": {
            "get": admin(
                "Tokens and turns per day, chat and user (UTC days)",
                ok("UsageReport"),
                params=[
                    query(
                        "days",
                        "how many days back, today included",
                        "integer",
                        minimum=1,
                        maximum=366,
                        default=30,
                    ),
                    query("chat", "one chat key"),
                    query("user", "one user id (or platform:user_id)"),
                ],
                errors={"400": error("a bad parameter")},
            )
        },
        "/api/plugins": {"get": admin("Loaded plugins and those that failed", ok("PluginList"))},
        "/api/mcp": {"get": admin("MCP servers and their state", ok("MCPList"))},
        "/api/reminders": {
            "get": admin(
                "Pending reminders, soonest first",
                ok("ReminderList"),
                params=[query("chat", "one chat key")],
            )
        },
        "/api/reminders/{id}": {
            "parameters": [job_id],
            "delete": {
                **admin("Cancel a reminder for good", {"description": "unused"}),
                "responses": {
                    "204": {"description": "cancelled"},
                    **API_ERRORS,
                    "404": error("no pending reminder with that id"),
                },
            },
        },
        "/api/openapi.json": {
            "get": admin(
                "This document",
                {"description": "OpenAPI 3.1", "content": {"application/json": {}}},
            )
        },
        "/metrics": {
            "get": admin(
                "Prometheus metrics (turns, LLM latency and errors, tokens, queue waits...)",
                {"description": "Prometheus text format", "content": {"text/plain": {}}},
            )
        },
    }


def _health() -> JSON:
    def probe(summary: str) -> JSON:
        return {
            "get": {
                "summary": summary,
                "tags": ["health"],
                "security": [],
                "responses": {
                    "200": {"description": "ok"},
                    "503": {"description": "not ready (the database does not answer)"},
                },
            }
        }

    return {"/healthz": probe("The process answers"), "/readyz": probe("The database answers")}


def _components() -> JSON:
    found: JSON = {}
    for model in _MODELS:
        schema = model.model_json_schema(ref_template=REF_TEMPLATE)
        found.update(schema.pop("$defs", {}))
        found[model.__name__] = schema
    for name, properties in SHAPES.items():
        found[name] = {"type": "object", "required": sorted(properties), "properties": properties}
    found["ChatError"] = {
        "type": "object",
        "description": "OpenAI's error shape",
        "properties": {
            "error": {
                "type": "object",
                "properties": {
                    "message": {"type": "string"},
                    "type": {"type": "string"},
                    "param": {"type": ["string", "null"]},
                    "code": {"type": ["string", "null"]},
                },
            }
        },
    }
    return found


@cache
def document() -> JSON:
    """The document (built once: it depends on code only)."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Parlour HTTP API",
            "version": "1",
            "description": "The chat endpoint (OpenAI-compatible), the admin API and metrics."
            " Every route but /healthz and /readyz needs a token: Authorization: Bearer <token>"
            " (admin routes: an admin token, or the dashboard's session cookie with the"
            " X-CSRF-Token header on changes; /v1: a chat or an admin token).",
        },
        "paths": {
            **_health(),
            **_chat_endpoint(),
            **_admin_routes(),
            **_chat_routes(),
            **knowledge_routes(),
            **catchup_routes(),
            **schedule_routes(),
        },
        "components": {
            "schemas": _components(),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "session": {"type": "apiKey", "in": "cookie", "name": "parlour_session"},
            },
        },
    }
