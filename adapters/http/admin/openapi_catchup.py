"""The catch-up route of the OpenAPI document (:mod:`adapters.http.admin.catchup`): its answer
is the pydantic model the handler serialises."""

from __future__ import annotations

from adapters.http.admin import catchup
from adapters.http.admin.openapi_parts import CHAT_KEY, JSON, admin, error, ok

__all__ = ["CATCHUP_MODELS", "catchup_routes"]

CATCHUP_MODELS = (catchup.CatchupBody,)

_SPAN = {
    "required": False,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "hours": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "description": "the last N hours (at most catchup.max_hours)",
                    },
                    "messages": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "the last N messages (at most catchup.max_messages,"
                        " the default)",
                    },
                    "conversation_key": {
                        "type": "string",
                        "description": "one of the chat's conversations (a topic's, a"
                        " person's); default: the chat's shared one",
                    },
                },
            }
        }
    },
}


def catchup_routes() -> JSON:
    return {
        "/api/chats/{chat_key}/catchup": {
            "parameters": [CHAT_KEY],
            "post": admin(
                "Summarise what a conversation of the chat said (as /catchup; the model calls"
                " are booked on the chat)",
                ok("CatchupBody"),
                requestBody=_SPAN,
                errors={
                    "400": error("a bad body, or a span past the limits"),
                    "404": error("no such chat, or catch-up is off"),
                    "502": error("the model could not answer"),
                },
            ),
        }
    }
