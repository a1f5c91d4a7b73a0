"""The admin API's scheduled posts: list (``GET /api/schedules``), create (``POST``) and cancel
(``DELETE /api/schedules/{id}``), and the operations the dashboard's page shares.

The work is the bot's own (``platform.operator.schedules``: the object ``/schedule`` uses), so
a post set here is the one a chat lists, and the same rules refuse it: a schedule in the grammar
of :mod:`bot.scheduling.recurrence`, a group chat the bot knows, the chat's limit. A refusal is
a 400 whose message is the reason a person can act on; nothing is scheduled then. With
``schedules.enabled: false`` the list is empty and a create is a 404 (``schedules_off``).
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from pydantic import Field

from adapters.http.admin.params import is_key, positive_id
from adapters.http.admin.schemas import Body
from adapters.http.context import CONTEXT, PRINCIPAL, HTTPContext, json_error
from bot.platform.operator import ScheduleBoard
from bot.scheduling.posts import ScheduledPost
from bot.scheduling.recurrence import ScheduleError

__all__ = [
    "ScheduleInfo",
    "ScheduleList",
    "SchedulesOff",
    "add_routes",
    "board",
    "cancel",
    "create",
    "listed",
]

log = logging.getLogger(__name__)

_FIELDS = {"chat_key", "schedule", "prompt", "thread_id"}
_BODY = '{"chat_key": "telegram:-100123", "schedule": "every monday 09:00", "prompt": "..."}'


class ScheduleInfo(Body):
    id: int = Field(description="the post's number, for DELETE /api/schedules/{id}")
    chat_key: str
    thread_id: str | None = Field(description="the topic or thread it posts in (null: none)")
    schedule: str = Field(description='for people: "every Monday at 09:00 (Europe/Berlin)"')
    rule: str = Field(description='the same in the grammar POST takes: "every monday 09:00 …"')
    recurring: bool = Field(description="false: a one-off, gone once it ran")
    timezone: str = Field(description="the IANA zone its times are in")
    prompt: str
    created_by: str = Field(description='"telegram:7" (an admin in the chat), "http:<token>"')
    created_by_name: str
    created_at: str = Field(description="ISO 8601, UTC")
    next_run: str | None = Field(description="ISO 8601, UTC (null: running now)")


class ScheduleList(Body):
    schedules: list[ScheduleInfo] = Field(description="soonest first")


class SchedulesOff(Exception):
    """``schedules.enabled`` is false: nothing can be scheduled (a 404)."""


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    router = web_app.router
    router.add_get("/api/schedules", list_schedules)
    router.add_post("/api/schedules", create_schedule)
    router.add_delete("/api/schedules/{id}", cancel_schedule)


def info(post: ScheduledPost) -> ScheduleInfo:
    recurrence = post.recurrence
    return ScheduleInfo(
        id=post.id,
        chat_key=post.target.chat_key,
        thread_id=post.target.thread_id,
        schedule=recurrence.describe(),
        rule=recurrence.rule(),
        recurring=not recurrence.once,
        timezone=recurrence.zone,
        prompt=post.prompt,
        created_by=post.created_by,
        created_by_name=post.created_by_name,
        created_at=post.created_at.isoformat(),
        next_run=None if post.next_run is None else post.next_run.isoformat(),
    )


def board(request: web.Request) -> ScheduleBoard:
    schedules = request.app[CONTEXT].platform.operator.schedules
    if schedules is None:
        raise SchedulesOff
    return schedules


def listed(request: web.Request, chat: str | None = None) -> ScheduleList:
    """Pending posts (of one chat), soonest first; none when scheduled posts are off."""
    schedules = request.app[CONTEXT].platform.operator.schedules
    posts = [] if schedules is None else schedules.listed(chat)
    return ScheduleList(schedules=[info(post) for post in posts])


async def create(
    request: web.Request, chat_key: str, thread_id: str | None, when: str, prompt: str
) -> ScheduleInfo:
    """Schedule a post as the caller (audited in their name); raises ``ScheduleError`` (the
    reason) or SchedulesOff."""
    caller = request[PRINCIPAL].audit_name
    post = await board(request).schedule_in(chat_key, thread_id, when, prompt, by=caller)
    log.info("scheduled post %d created chat=%s caller=%s", post.id, chat_key, caller)
    return info(post)


async def cancel(request: web.Request, raw_id: str) -> bool:
    """Cancel for good, audited as the caller; False: no such pending post (or scheduled posts
    are off)."""
    post_id = positive_id(raw_id)
    schedules = request.app[CONTEXT].platform.operator.schedules
    if post_id is None or schedules is None:
        return False
    caller = request[PRINCIPAL].audit_name
    post = await schedules.cancel(post_id, by=caller)
    if post is not None:
        log.info("scheduled post %d cancelled caller=%s", post_id, caller)
    return post is not None


def _json(body: Body, status: int = 200) -> web.Response:
    response = web.json_response(body.model_dump(mode="json"), status=status)
    response.headers["Cache-Control"] = "no-store"
    return response


async def list_schedules(request: web.Request) -> web.Response:
    chat = request.query.get("chat", "").strip() or None
    if chat is not None and (":" not in chat or not is_key(chat)):
        return json_error(400, "chat is a chat key like telegram:-100123", "invalid_parameter")
    return _json(listed(request, chat))


async def create_schedule(request: web.Request) -> web.Response:
    try:
        body: Any = await request.json()
    except (ValueError, RecursionError):
        body = None
    problem = _problem(body)
    if problem:
        return json_error(400, f"{problem}; the body is {_BODY}", "invalid_parameter")
    thread = body.get("thread_id")
    try:
        made = await create(
            request,
            body["chat_key"],
            None if thread is None else str(thread),
            body["schedule"],
            body["prompt"],
        )
    except SchedulesOff:
        return json_error(404, "scheduled posts are off (schedules.enabled)", "schedules_off")
    except ScheduleError as exc:
        return json_error(400, exc.chat_text, "invalid_schedule")
    return _json(made, status=201)


def _problem(body: Any) -> str:
    """What is wrong with a create's body ("" when nothing)."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    unknown = set(body) - _FIELDS
    if unknown:
        return f"unknown field {sorted(unknown)[0]!r}"
    for name in ("chat_key", "schedule", "prompt"):
        if not isinstance(body.get(name), str) or not body[name].strip():
            return f"{name} must be a non-empty string"
    if ":" not in body["chat_key"] or not is_key(body["chat_key"]):
        return "chat_key is a chat key like telegram:-100123"
    thread = body.get("thread_id")
    if thread is not None and (
        isinstance(thread, bool) or not isinstance(thread, str | int) or not is_key(str(thread))
    ):
        return "thread_id must be a string, a number or null"
    return ""


async def cancel_schedule(request: web.Request) -> web.Response:
    if not await cancel(request, request.match_info["id"]):
        return json_error(404, "no pending scheduled post with that id", "not_found")
    return web.Response(status=204)
