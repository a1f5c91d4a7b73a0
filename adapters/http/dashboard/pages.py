"""The dashboard's pages: chats, a chat (history with tool calls and rendered answers, clear,
reset, scope and persona, audit), usage, memories, reminders, plugins and MCP servers.

Server-rendered (:mod:`adapters.http.dashboard.render`), so every page works without JavaScript; the
one script only asks for confirmation before a destructive form is sent. State changes are POST
forms carrying the CSRF field (the guard checks it) and answer with a redirect, so a reload never
repeats them. The data and the changes are the admin API's own (:mod:`adapters.http.admin.chat_ops`,
:mod:`adapters.http.admin.ops`), so a page and its JSON twin never disagree. A chat key, memory id
or reminder id no database can hold is a 404, a ``before`` that is not a row id a 400
(:mod:`adapters.http.admin.params`).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from urllib.parse import quote

from aiohttp import web

from adapters.http.admin import ops as admin_ops
from adapters.http.admin.chat_ops import BadSetting, MemoryOff, UnknownChat, ops_for
from adapters.http.admin.params import BadParameter, is_key, positive_id, query_int
from adapters.http.context import CONTEXT, PRINCIPAL, HTTPContext, see_other
from adapters.http.dashboard.render import render
from adapters.http.dashboard.usage_chart import bar_chart
from adapters.http.identity import actor_of
from bot.context import Scope
from bot.values import ClearResult

__all__ = ["add_routes"]

log = logging.getLogger(__name__)

PAGE = 30  # turns per history page
USAGE_DAYS = 14  # the usage page's period
LISTED = 200  # chats and memories a page lists


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    router = web_app.router
    router.add_get("/", chats_page)
    router.add_get("/chats/{chat_key}", chat_page)
    router.add_post("/chats/{chat_key}/clear", clear)
    router.add_post("/chats/{chat_key}/reset", reset)
    router.add_post("/chats/{chat_key}/settings", change_settings)
    router.add_get("/chats/{chat_key}/memories", memories_page)
    router.add_post("/chats/{chat_key}/memories/{memory_id}/delete", delete_memory)
    router.add_get("/usage", usage_page)
    router.add_get("/reminders", reminders_page)
    router.add_post("/reminders/{job_id}/cancel", cancel_reminder)
    router.add_get("/tools", tools_page)


def chat_url(chat_key: str, tail: str = "") -> str:
    return f"/chats/{quote(chat_key, safe=':')}{tail}"


def reminder_url(job_id: str, tail: str = "/cancel") -> str:
    """A reminder's path by its scheduler job id (``reminders:1``), as the admin API names it."""
    return f"/reminders/{quote(job_id, safe=':')}{tail}"


def when(seconds: float) -> str:
    """A time as the tables show it (UTC, to the minute)."""
    if not seconds:
        return "—"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _number(request: web.Request, name: str) -> int:
    number = positive_id(request.match_info[name])
    if number is None:
        raise web.HTTPNotFound(text="no such item")
    return number


def _chat_key(request: web.Request) -> str:
    """The path's chat key; one with a character no key has is no chat."""
    chat_key = request.match_info["chat_key"]
    if not is_key(chat_key):
        raise web.HTTPNotFound(text="no such chat")
    return chat_key


async def chats_page(request: web.Request) -> web.Response:
    ops = ops_for(request)
    query = request.query.get("q", "")[:200]
    views = await ops.chats(query.strip(), limit=LISTED)
    return render(request, "chats.html", views=views, q=query, chat_url=chat_url, when=when)


async def chat_page(request: web.Request) -> web.Response:
    return await _chat_page(request, _chat_key(request))


async def _chat_page(
    request: web.Request, chat_key: str, *, error: str = "", status: int = 200
) -> web.Response:
    """The chat's facts, settings, history and audit; a chat the directory does not know
    (no turn, entry or audit entry) is a 404."""
    ops = ops_for(request)
    try:
        before = query_int(request, "before", None, 1)
    except BadParameter as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
    try:
        view = await ops.chat(chat_key)
    except UnknownChat:
        return render(request, "missing.html", status=404, what=f"No chat {chat_key} is stored.")
    page = await ops.history(chat_key, before, PAGE)
    platform = request.app[CONTEXT].platform
    billed = (await admin_ops.usage(platform, days=USAGE_DAYS, chat=chat_key)).total.turns
    return render(
        request,
        "chat.html",
        status=status,
        chat_key=chat_key,
        summary=view.summary,
        view=view,
        scopes=[scope.value for scope in Scope],
        max_persona=platform.settings.chat.max_persona_chars,
        billed=billed,
        usage_days=USAGE_DAYS,
        history=page.items,
        older=page.next_before,
        audit=list(reversed(await ops.audit(chat_key))),  # newest first; kept after a clear
        actor=actor_of,
        done=request.query.get("done", ""),
        error=error,
        chat_url=chat_url,
        when=when,
    )


async def clear(request: web.Request) -> web.Response:
    chat_key = _chat_key(request)
    caller = request[PRINCIPAL]
    try:
        result = await ops_for(request).clear(chat_key, caller)
    except UnknownChat:  # nothing stored: nothing to clear, nothing audited
        result = ClearResult(turns=0, messages=0)
    log.info(
        "dashboard clear chat=%s caller=%s turns=%d", chat_key, caller.audit_name, result.turns
    )
    return see_other(chat_url(chat_key, f"?done=cleared-{result.turns}"))


async def reset(request: web.Request) -> web.Response:
    chat_key = _chat_key(request)
    caller = request[PRINCIPAL]
    try:
        count = len(await ops_for(request).reset(chat_key, caller))
    except UnknownChat:
        count = 0
    log.info("dashboard reset chat=%s caller=%s", chat_key, caller.audit_name)
    return see_other(chat_url(chat_key, f"?done=reset-{count}"))


async def change_settings(request: web.Request) -> web.Response:
    """The scope form (``scope``) or the persona form (``persona``; ``reset`` for the
    preset's or the default), through the same service as /scope and /persona."""
    chat_key = _chat_key(request)
    form = await request.post()
    scope_text = str(form.get("scope", "")) or None
    persona = form.get("persona")
    try:
        scope = Scope(scope_text) if scope_text else None
    except ValueError:
        return await _chat_page(request, chat_key, error="No such scope.", status=400)
    try:
        _, changed = await ops_for(request).change(
            chat_key,
            request[PRINCIPAL],
            scope=scope,
            persona=None if persona is None else str(persona),
            reset_persona="reset" in form,
        )
    except UnknownChat:
        raise web.HTTPNotFound(text="no such chat") from None
    except BadSetting as exc:
        error = f"Nothing was changed: {exc}."
        return await _chat_page(request, chat_key, error=error, status=400)
    log.info(
        "dashboard settings chat=%s caller=%s changed=%s",
        chat_key,
        request[PRINCIPAL].audit_name,
        ",".join(changed) or "-",
    )
    return see_other(chat_url(chat_key, f"?done=changed-{'-'.join(changed) or 'nothing'}"))


async def memories_page(request: web.Request) -> web.Response:
    ops = ops_for(request)
    chat_key = _chat_key(request)
    try:
        memories = await ops.memories(chat_key, limit=LISTED)
        memory_on = True
    except MemoryOff:
        memories, memory_on = [], False
    return render(
        request,
        "memories.html",
        chat_key=chat_key,
        memories=memories,
        memory_on=memory_on,
        done=request.query.get("done", ""),
        chat_url=chat_url,
        when=when,
    )


async def delete_memory(request: web.Request) -> web.Response:
    ops = ops_for(request)
    chat_key = _chat_key(request)
    memory_id = _number(request, "memory_id")
    try:
        found = await ops.forget(chat_key, memory_id, request[PRINCIPAL])
    except MemoryOff:
        found = False
    if not found:
        raise web.HTTPNotFound(text="no such memory in this chat")
    log.info("dashboard memory deleted chat=%s caller=%s", chat_key, request[PRINCIPAL].audit_name)
    return see_other(chat_url(chat_key, "/memories?done=deleted"))


async def usage_page(request: web.Request) -> web.Response:
    platform = request.app[CONTEXT].platform
    report = await admin_ops.usage(platform, days=USAGE_DAYS)
    chart = bar_chart(report.days)
    return render(request, "usage.html", report=report, chart=chart, chat_url=chat_url)


async def reminders_page(request: web.Request) -> web.Response:
    platform = request.app[CONTEXT].platform
    listed = admin_ops.reminders(platform).reminders
    done = request.query.get("done", "")
    return render(
        request,
        "reminders.html",
        reminders=listed,
        done=done,
        chat_url=chat_url,
        reminder_url=reminder_url,
    )


async def cancel_reminder(request: web.Request) -> web.Response:
    """Cancel for good through the scheduler, as ``DELETE /api/reminders/{id}`` does: the
    plugin's on-cancel hook forgets its own record."""
    platform = request.app[CONTEXT].platform
    job_id = request.match_info["job_id"]
    if not await admin_ops.cancel_reminder(platform, job_id):
        raise web.HTTPNotFound(text="no such reminder")
    log.info("dashboard reminder %s cancelled caller=%s", job_id, request[PRINCIPAL].audit_name)
    return see_other("/reminders?done=cancelled")


async def tools_page(request: web.Request) -> web.Response:
    platform = request.app[CONTEXT].platform
    return render(
        request,
        "tools.html",
        plugins=admin_ops.plugins(platform),
        mcp=admin_ops.mcp_servers(platform),
    )
