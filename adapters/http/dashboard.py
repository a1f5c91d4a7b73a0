"""The dashboard's pages: chats, a chat (history, clear, reset, audit), usage, memories,
reminders, plugins and MCP servers.

Server-rendered (:mod:`adapters.http.pages`), so every page works without JavaScript; the one
script only asks for confirmation before a destructive form is sent. State changes are POST
forms carrying the CSRF field (the guard checks it) and answer with a redirect, so a reload
never repeats them. The data comes from :mod:`adapters.http.dashboard_data`.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from urllib.parse import quote

from aiohttp import web

from adapters.http import dashboard_data as data
from adapters.http.pages import render
from adapters.http.server import CONTEXT, PRINCIPAL, HTTPContext, see_other
from adapters.http.usage_chart import bar_chart

__all__ = ["add_routes"]

log = logging.getLogger(__name__)

PAGE = 30  # turns per history page


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    router = web_app.router
    router.add_get("/", chats_page)
    router.add_get("/chats/{chat_key}", chat_page)
    router.add_post("/chats/{chat_key}/clear", clear)
    router.add_post("/chats/{chat_key}/reset", reset)
    router.add_get("/chats/{chat_key}/memories", memories_page)
    router.add_post("/chats/{chat_key}/memories/{memory_id}/delete", delete_memory)
    router.add_get("/usage", usage_page)
    router.add_get("/reminders", reminders_page)
    router.add_post("/reminders/{reminder_id}/cancel", cancel_reminder)
    router.add_get("/tools", tools_page)


def chat_url(chat_key: str, tail: str = "") -> str:
    return f"/chats/{quote(chat_key, safe=':')}{tail}"


def when(seconds: float) -> str:
    """A time as the tables show it (UTC, to the minute)."""
    if not seconds:
        return "—"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _number(request: web.Request, name: str) -> int:
    try:
        return int(request.match_info[name])
    except ValueError:
        raise web.HTTPNotFound(text="no such item") from None


async def chats_page(request: web.Request) -> web.Response:
    app = request.app[CONTEXT].app
    query = request.query.get("q", "")[:200]
    chats = await data.list_chats(app, query, limit=200)
    return render(request, "chats.html", chats=chats, q=query, chat_url=chat_url, when=when)


async def chat_page(request: web.Request) -> web.Response:
    app = request.app[CONTEXT].app
    chat_key = request.match_info["chat_key"]
    summary = await data.chat_summary(app, chat_key)
    audit = await data.chat_audit(app, chat_key)
    if summary is None and not audit:
        return render(request, "missing.html", status=404, what=f"No chat {chat_key} is stored.")
    before_text = request.query.get("before", "")
    before = int(before_text) if before_text.isdigit() else None
    history = await data.history_page(app, chat_key, before, PAGE + 1) if summary else []
    older = history[PAGE].turn_id + 1 if len(history) > PAGE else None
    settings = data.chat_settings(app, summary) if summary else None
    return render(
        request,
        "chat.html",
        chat_key=chat_key,
        summary=summary,
        settings=settings,
        history=history[:PAGE],
        older=older,
        audit=audit,
        done=request.query.get("done", ""),
        chat_url=chat_url,
        when=when,
    )


async def clear(request: web.Request) -> web.Response:
    context = request.app[CONTEXT]
    chat_key = request.match_info["chat_key"]
    caller = request[PRINCIPAL]
    result = await data.clear_chat(context.app, chat_key, caller)
    log.info(
        "dashboard clear chat=%s caller=%s turns=%d", chat_key, caller.audit_name, result.turns
    )
    return see_other(chat_url(chat_key, f"?done=cleared-{result.turns}"))


async def reset(request: web.Request) -> web.Response:
    context = request.app[CONTEXT]
    chat_key = request.match_info["chat_key"]
    caller = request[PRINCIPAL]
    count = await data.reset_chat(context.app, chat_key, caller)
    log.info("dashboard reset chat=%s caller=%s", chat_key, caller.audit_name)
    return see_other(chat_url(chat_key, f"?done=reset-{count}"))


async def memories_page(request: web.Request) -> web.Response:
    app = request.app[CONTEXT].app
    chat_key = request.match_info["chat_key"]
    memories = await data.list_memories(app, chat_key)
    return render(
        request,
        "memories.html",
        chat_key=chat_key,
        memories=memories,
        done=request.query.get("done", ""),
        chat_url=chat_url,
        when=when,
    )


async def delete_memory(request: web.Request) -> web.Response:
    app = request.app[CONTEXT].app
    chat_key = request.match_info["chat_key"]
    memory_id = _number(request, "memory_id")
    if not await data.delete_memory(app, chat_key, memory_id):
        raise web.HTTPNotFound(text="no such memory in this chat")
    log.info("dashboard memory deleted chat=%s caller=%s", chat_key, request[PRINCIPAL].audit_name)
    return see_other(chat_url(chat_key, "/memories?done=deleted"))


async def usage_page(request: web.Request) -> web.Response:
    app = request.app[CONTEXT].app
    report = await data.usage_report(app, days=14)
    chart = bar_chart(report.days)
    return render(request, "usage.html", report=report, chart=chart, chat_url=chat_url)


async def reminders_page(request: web.Request) -> web.Response:
    app = request.app[CONTEXT].app
    rows = await data.reminders(app)
    done = request.query.get("done", "")
    return render(request, "reminders.html", reminders=rows, done=done, chat_url=chat_url)


async def cancel_reminder(request: web.Request) -> web.Response:
    app = request.app[CONTEXT].app
    reminder_id = _number(request, "reminder_id")
    if not await data.cancel_reminder(app, reminder_id):
        raise web.HTTPNotFound(text="no such reminder")
    log.info(
        "dashboard reminder %d cancelled caller=%s", reminder_id, request[PRINCIPAL].audit_name
    )
    return see_other("/reminders?done=cancelled")


async def tools_page(request: web.Request) -> web.Response:
    app = request.app[CONTEXT].app
    return render(request, "tools.html", states=data.plugin_states(app))
