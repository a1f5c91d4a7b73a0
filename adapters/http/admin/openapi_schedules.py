"""The scheduled posts' routes of the OpenAPI document (:mod:`adapters.http.admin.schedules`):
their bodies are the pydantic models the handlers serialise."""

from __future__ import annotations

from adapters.http.admin import schedules
from adapters.http.admin.openapi_parts import API_ERRORS, JSON, admin, error, ok, path_param, query

__all__ = ["SCHEDULE_MODELS", "schedule_routes"]

SCHEDULE_MODELS = (schedules.ScheduleList, schedules.ScheduleInfo)

_CREATE = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "additionalProperties": False,
                "required": ["chat_key", "schedule", "prompt"],
                "properties": {
                    "chat_key": {
                        "type": "string",
                        "description": "a group chat the bot knows: telegram:-100123",
                    },
                    "schedule": {
                        "type": "string",
                        "description": "every monday 09:00 Europe/Berlin | every mon,thu 18:30"
                        " | every day 08:30 UTC | once 2026-12-24 18:00 Europe/Berlin (no zone:"
                        " schedules.timezone)",
                    },
                    "prompt": {
                        "type": "string",
                        "description": "what the model is asked at each run, with the chat's"
                        " context and tools; its answer is posted to the chat",
                    },
                    "thread_id": {
                        "type": ["string", "integer", "null"],
                        "description": "the topic or thread to post in",
                    },
                },
            }
        }
    },
}


def schedule_routes() -> JSON:
    return {
        "/api/schedules": {
            "get": admin(
                "Pending scheduled posts, soonest first",
                ok("ScheduleList"),
                params=[query("chat", "one chat key")],
                errors={"400": error("a bad chat key")},
            ),
            "post": {
                **admin("Schedule a post in a chat", {"description": "unused"}),
                "requestBody": _CREATE,
                "responses": {
                    "201": ok("ScheduleInfo", "scheduled: its number and next run"),
                    **API_ERRORS,
                    "400": error(
                        "a malformed body, or a schedule refused: a bad time zone, time or"
                        " date, a date past, an unknown or private chat, the chat's limit"
                        " (the message says which)"
                    ),
                    "404": error("scheduled posts are off (schedules.enabled)"),
                },
            },
        },
        "/api/schedules/{id}": {
            "parameters": [path_param("id", "the post's number as listed")],
            "delete": {
                **admin("Cancel a scheduled post for good", {"description": "unused"}),
                "responses": {
                    "204": {"description": "cancelled"},
                    **API_ERRORS,
                    "404": error("no pending scheduled post with that id"),
                },
            },
        },
    }
