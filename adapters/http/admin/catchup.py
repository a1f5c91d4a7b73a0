"""The admin API's catch-up: ``POST /api/chats/{chat_key}/catchup`` summarises one conversation
of a chat, as ``/catchup`` does in it (:mod:`bot.conversation.catchup`), in the token's name.

The body (optional) is ``{"hours": 2}`` or ``{"messages": 50}`` (default: the conversation's
last ``catchup.max_messages`` messages), with ``"conversation_key"`` for another conversation of
the chat than its shared one (a topic's, a person's). The model calls are booked on the chat as
the token's (``http:NAME``); an operator's token is never held to the daily budgets. A bad body
or a span past the limits is a 400, a key no chat can have a 404 (so is ``catchup.enabled:
false``; a chat with nothing stored is summarised as nothing), the model failing a 502, each as
``{"error": {"message", "code"}}``.
"""

from __future__ import annotations

import math
from typing import Any

from aiohttp import web
from pydantic import Field

from adapters.http.admin.chats import iso
from adapters.http.admin.params import is_key
from adapters.http.admin.schemas import Body
from adapters.http.context import CONTEXT, PRINCIPAL, HTTPContext, json_error
from bot.context import ChatContext, ChatType
from bot.errors import CatchupRefusedError, LLMError
from bot.values import ChatSummary

__all__ = ["CatchupBody", "CatchupUsage", "add_routes"]

_FIELDS = frozenset({"hours", "messages", "conversation_key"})


class CatchupUsage(Body):
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int


class CatchupBody(Body):
    """One catch-up of a chat's conversation."""

    chat_key: str
    conversation_key: str
    summary: str = Field(description="what the model wrote; empty when nothing was said")
    reply: str = Field(description="what a chat would be shown: a header line, then the summary")
    messages: int = Field(description="messages summarised")
    left_out: int = Field(description="older messages of the span not read (the limits)")
    speakers: list[str] = Field(description="who spoke, most messages first")
    first_at: str | None = Field(description="the first summarised message's time (UTC)")
    last_at: str | None
    model_calls: int
    usage: CatchupUsage = Field(description="booked on the chat's usage as the token's")


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    web_app.router.add_post("/api/chats/{chat_key}/catchup", catch_up)


async def catch_up(request: web.Request) -> web.Response:
    platform = request.app[CONTEXT].platform
    catchups = platform.operator.catchup
    if catchups is None:
        return json_error(404, "catch-up is off (catchup.enabled)", "catchup_off")
    chat_key = request.match_info["chat_key"]
    where, _, chat_id = chat_key.partition(":")
    if not (is_key(chat_key) and where and chat_id):
        return json_error(404, "no such chat", "chat_not_found")
    # A group the bot only overheard is in no directory yet: its chatter is still there.
    summary = await platform.store.chat_summary(chat_key) or ChatSummary(
        chat_key, where, chat_id, ChatType.GROUP.value, "", 0, 0.0
    )
    body = await _body(request)
    if isinstance(body, str):
        return json_error(400, body, "invalid_parameter")
    name = request[PRINCIPAL].audit_name
    ctx = _operator_in(summary, name)
    key = body.get("conversation_key") or _shared_conversation(summary)
    try:
        report = await catchups.for_operator(
            ctx, key, hours=body.get("hours"), messages=body.get("messages")
        )
    except CatchupRefusedError as exc:
        return json_error(400, exc.chat_text, "catchup_refused")
    except LLMError as exc:
        return json_error(502, exc.chat_text, "llm_error")
    used = report.usage
    answer = CatchupBody(
        chat_key=chat_key,
        conversation_key=report.conversation_key,
        summary=report.summary,
        reply=report.reply,
        messages=report.messages,
        left_out=report.left_out,
        speakers=list(report.speakers),
        first_at=None if report.first_at is None else iso(report.first_at),
        last_at=None if report.last_at is None else iso(report.last_at),
        model_calls=report.calls,
        usage=CatchupUsage(
            prompt_tokens=used.prompt_tokens,
            completion_tokens=used.completion_tokens,
            cached_tokens=used.cached_tokens,
        ),
    )
    return web.json_response(answer.model_dump(mode="json"))


async def _body(request: web.Request) -> dict[str, Any] | str:
    """The body's span, checked for shape (the limits are the catch-up's), or what is wrong."""
    shape = 'the body is {"hours": N} or {"messages": N}, with "conversation_key" optional'
    if not request.can_read_body:
        return {}
    try:
        body = await request.json()
    except (ValueError, RecursionError):
        return shape
    if not isinstance(body, dict) or set(body) - _FIELDS:
        return shape
    hours, messages, key = body.get("hours"), body.get("messages"), body.get("conversation_key")
    if hours is not None and messages is not None:
        return "give hours or messages, not both"
    if hours is not None and (
        isinstance(hours, bool) or not isinstance(hours, int | float) or not math.isfinite(hours)
    ):
        return "hours must be a number"
    if messages is not None and (isinstance(messages, bool) or not isinstance(messages, int)):
        return "messages must be an integer"
    if key is not None and (not isinstance(key, str) or not is_key(key)):
        return "conversation_key must be one of the chat's conversation keys"
    return body


def _operator_in(summary: ChatSummary, name: str) -> ChatContext:
    """The token's caller in the chat: an operator (never held to the budgets)."""
    try:
        kind = ChatType(summary.chat_type)
    except ValueError:
        kind = ChatType.GROUP
    return ChatContext(summary.platform, summary.chat_id, kind, name, name, is_owner=True)


def _shared_conversation(summary: ChatSummary) -> str:
    """The chat's shared conversation; a private chat's is its person's."""
    if summary.chat_type == ChatType.PRIVATE:
        return f"{summary.chat_key}:u:{summary.chat_id}"
    return summary.chat_key
