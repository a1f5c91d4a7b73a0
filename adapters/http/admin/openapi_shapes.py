"""The JSON the admin API's chat routes write (:mod:`adapters.http.admin.chats`: ``chat_json``,
``item_json``, ``audit_json``, ``memory_json``), described for the OpenAPI document."""

from __future__ import annotations

from adapters.http.admin.openapi_parts import JSON
from bot.values import AuditAction

__all__ = ["SETTINGS_BODY", "SHAPES"]

_STR, _INT, _TIME = (
    {"type": "string"},
    {"type": "integer"},
    {"type": "string", "format": "date-time", "description": "ISO 8601, UTC"},
)
_NULLABLE = {"type": ["string", "null"]}
# What adapters.http.admin.chats writes (chat_json, item_json, audit_json, memory_json).
SHAPES: dict[str, JSON] = {
    "ChatSummary": {
        "chat_key": _STR,
        "platform": _STR,
        "token": {
            **_NULLABLE,
            "description": "http chats: the token (namespace) the conversation belongs to;"
            " null on other platforms and for keys stored before namespaces",
        },
        "chat_id": _STR,
        "chat_type": {"type": "string", "description": "private, group, channel; '' unknown"},
        "title": _STR,
        "turns": {
            "type": "integer",
            "description": "turns stored (every status but context); /clear and retention"
            " delete them, so a cleared chat is listed with 0 (turns billed: /api/usage)",
        },
        "last_activity": {**_TIME, "description": "its newest stored turn or audit entry"},
        "scope": {"type": "string", "enum": ["chat", "user", "thread"]},
        "persona": {**_NULLABLE, "description": "the system prompt /persona set, or null"},
        "persona_source": {"type": "string", "enum": ["chat", "preset", "default"]},
    },
    "HistoryItem": {
        "turn_id": _INT,
        "conversation_key": _STR,
        "user_id": _STR,
        "user_name": {"type": "string", "description": "who wrote it"},
        "text": _STR,
        "answer": {"type": "string", "description": "the final answer ('' when none)"},
        "status": _STR,
        "created_at": _TIME,
        "tool_calls": {
            "type": "array",
            "description": "the tools the bot called for this answer, in order",
            "items": {"$ref": "#/components/schemas/ToolCall"},
        },
    },
    "ToolCall": {
        "name": _STR,
        "arguments": {"type": "string", "description": "as the model wrote them (JSON text)"},
        "result": {"type": "string", "description": "what the tool answered ('' when none)"},
    },
    "AuditEntry": {
        "at": _TIME,
        "action": {"type": "string", "enum": [action.value for action in AuditAction]},
        "actor_id": {
            "type": "string",
            "description": "http:<token name> for a token; else the person's id on the chat's"
            " platform",
        },
        "actor_name": {"type": "string", "description": "a person's display name (theirs)"},
        "actor_kind": {
            "type": "string",
            "enum": ["token", "user"],
            "description": "a token (admin API, dashboard) or a person in the chat",
        },
        "actor_platform": _STR,
        "detail": _STR,
        "conversation_key": _STR,
    },
    "MemoryItem": {
        "id": _INT,
        "conversation_key": _STR,
        "user_id": _STR,
        "user_name": _STR,
        "scope": _STR,
        "text": _STR,
        "created_at": _TIME,
    },
}

# The body of PATCH /api/chats/{chat_key}/settings (adapters.http.admin.chats.change_settings).
SETTINGS_BODY: JSON = {
    "type": "object",
    "minProperties": 1,
    "additionalProperties": False,
    "properties": {
        "scope": {
            "type": "string",
            "enum": ["chat", "user", "thread"],
            "description": "whose history is shared (as /scope; a private chat has only user)",
        },
        "persona": {
            "type": ["string", "null"],
            "description": "the chat's system prompt (as /persona); null or '': back to the"
            " preset's or the default",
        },
    },
}
