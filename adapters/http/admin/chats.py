"""The admin API's chat routes (JSON): the chats, one chat, its history pages (with each turn's
tool calls), clear, reset, its scope and persona (``PATCH .../settings``), its audit trail and
its memories. The work is :mod:`adapters.http.admin.chat_ops`'s (the dashboard
calls the same); this module only reads parameters and writes JSON.

A chat key holds ``:`` (``telegram:-1001234``): send it URL-encoded in the path or as is.
Times are ISO 8601 in UTC. Bad parameters are a 400 (a number past signed 64-bit too), an
unknown chat or memory a 404 (a key with a character no key has too), both as
``{"error": {"message", "code"}}``; :mod:`adapters.http.admin.params` reads them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from adapters.http.admin.chat_ops import (
    BadSetting,
    ChatOps,
    ChatView,
    MemoryOff,
    UnknownChat,
    ops_for,
)
from adapters.http.admin.params import BadParameter, is_key, positive_id, query_int
from adapters.http.context import PRINCIPAL, HTTPContext, json_error
from adapters.http.identity import actor_of
from bot.context import Scope
from bot.values import AuditEntry, HistoryItem, Memory

__all__ = ["add_routes", "iso"]

_CHAT = "/api/chats/{chat_key}"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    routes = web_app.router
    routes.add_get("/api/chats", _guarded(list_chats))
    routes.add_get(_CHAT, _guarded(get_chat))
    routes.add_get(f"{_CHAT}/history", _guarded(history))
    routes.add_post(f"{_CHAT}/clear", _guarded(clear))
    routes.add_post(f"{_CHAT}/reset", _guarded(reset))
    routes.add_patch(f"{_CHAT}/settings", _guarded(change_settings))
    routes.add_get(f"{_CHAT}/audit", _guarded(audit))
    routes.add_get(f"{_CHAT}/memories", _guarded(memories))
    routes.add_delete(f"{_CHAT}/memories/{{id}}", _guarded(forget))


def iso(unix: float) -> str:
    """A unix time as ISO 8601 UTC (``2026-12-01T22:15:34.120+00:00``)."""
    return datetime.fromtimestamp(unix, UTC).isoformat(timespec="milliseconds")


def _guarded(handler: Handler) -> Handler:
    """The handler with the module's errors as JSON: 400 for a bad parameter, 404 for an
    unknown chat or memory, or memory switched off."""

    async def run(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except (BadParameter, BadSetting) as exc:
            return json_error(400, str(exc), "invalid_parameter")
        except UnknownChat:
            return json_error(404, "no such chat", "chat_not_found")
        except MemoryOff as exc:
            return json_error(404, str(exc), "memory_off")

    return run


def _ops(request: web.Request) -> ChatOps:
    return ops_for(request)


def _limit(request: web.Request) -> int:
    value = query_int(request, "limit", 50, 1)
    assert value is not None
    return value


def _chat_key(request: web.Request) -> str:
    """The path's chat key; one with a character no key has is no chat (404)."""
    chat_key = request.match_info["chat_key"]
    if not is_key(chat_key):
        raise UnknownChat(chat_key)
    return chat_key


def chat_json(view: ChatView) -> dict[str, Any]:
    summary = view.summary
    return {
        "chat_key": summary.chat_key,
        "platform": summary.platform,
        "token": view.token,
        "chat_id": summary.chat_id,
        "chat_type": summary.chat_type,
        "title": summary.title,
        "turns": summary.turns,
        "last_activity": iso(summary.last_activity),
        "scope": view.scope.value,
        "persona": view.persona_override,
        "persona_source": view.persona.source.value,
    }


def item_json(item: HistoryItem) -> dict[str, Any]:
    return {
        "turn_id": item.turn_id,
        "conversation_key": item.conversation_key,
        "user_id": item.user_id,
        "user_name": item.user_name,
        "text": item.text,
        "answer": item.answer,
        "status": item.status.value,
        "created_at": iso(item.created_at),
        "tool_calls": [
            {"name": step.name, "arguments": step.arguments, "result": step.result}
            for step in item.tools
        ],
    }


def audit_json(entry: AuditEntry) -> dict[str, Any]:
    actor = actor_of(entry)
    return {
        "at": iso(entry.at),
        "action": entry.action.value,
        "actor_id": entry.actor_id,
        "actor_name": entry.actor_name,
        "actor_kind": actor.kind.value,
        "actor_platform": actor.platform,
        "detail": entry.detail,
        "conversation_key": entry.conversation_key,
    }


def memory_json(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.memory_id,
        "conversation_key": memory.conversation_key,
        "user_id": memory.user_id,
        "user_name": memory.user_name,
        "scope": memory.scope.value,
        "text": memory.text,
        "created_at": iso(memory.created_at),
    }


async def list_chats(request: web.Request) -> web.Response:
    limit = _limit(request)
    offset = query_int(request, "offset", 0, 0) or 0
    query = request.query.get("q", "").strip()
    found = await _ops(request).chats(query, limit, offset)
    return web.json_response(
        {"chats": [chat_json(view) for view in found], "limit": limit, "offset": offset}
    )


async def get_chat(request: web.Request) -> web.Response:
    return web.json_response(chat_json(await _ops(request).chat(_chat_key(request))))


async def history(request: web.Request) -> web.Response:
    before = query_int(request, "before", None, 1)
    page = await _ops(request).history(_chat_key(request), before, _limit(request))
    return web.json_response(
        {"items": [item_json(item) for item in page.items], "next_before": page.next_before}
    )


async def clear(request: web.Request) -> web.Response:
    result = await _ops(request).clear(_chat_key(request), request[PRINCIPAL])
    return web.json_response({"cleared": True, "turns": result.turns, "messages": result.messages})


async def reset(request: web.Request) -> web.Response:
    conversations = await _ops(request).reset(_chat_key(request), request[PRINCIPAL])
    return web.json_response({"reset": True, "conversations": conversations})


async def change_settings(request: web.Request) -> web.Response:
    """``{"scope": "user"}``, ``{"persona": "..."}`` (null or "": back to the preset's or the
    default), or both; answers the chat after the change and what changed."""
    chat_key = _chat_key(request)
    try:
        body = await request.json()
    except (ValueError, RecursionError):  # RecursionError: nested past the interpreter's limit
        raise BadParameter("the body must be a JSON object") from None
    if not isinstance(body, dict) or not body or set(body) - {"scope", "persona"}:
        raise BadParameter('the body is {"scope": "chat|user|thread", "persona": "..." | null}')
    scope = body.get("scope")
    if scope is not None and scope not in {s.value for s in Scope}:
        raise BadParameter("scope must be chat, user or thread")
    persona = body.get("persona")
    if persona is not None and not isinstance(persona, str):
        raise BadParameter("persona must be a string, or null for the default")
    view, changed = await _ops(request).change(
        chat_key,
        request[PRINCIPAL],
        scope=Scope(scope) if scope is not None else None,
        persona=persona,
        reset_persona="persona" in body and persona is None,
    )
    return web.json_response({**chat_json(view), "changed": changed})


async def audit(request: web.Request) -> web.Response:
    entries = await _ops(request).audit(_chat_key(request))  # oldest first: shown newest first
    return web.json_response({"entries": [audit_json(entry) for entry in reversed(entries)]})


async def memories(request: web.Request) -> web.Response:
    found = await _ops(request).memories(_chat_key(request), _limit(request))
    return web.json_response({"memories": [memory_json(memory) for memory in found]})


async def forget(request: web.Request) -> web.Response:
    chat_key = _chat_key(request)
    memory_id = positive_id(request.match_info["id"])
    if memory_id is None:
        raise BadParameter("the memory id must be an integer from 1 to 2**63 - 1")
    if not await _ops(request).forget(chat_key, memory_id, request[PRINCIPAL]):
        return json_error(404, "no such memory in this chat", "memory_not_found")
    return web.Response(status=204)
