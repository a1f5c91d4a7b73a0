"""The dashboard's scheduled posts: the pending ones (a cancel button on each) and a form to
schedule one in a chat the bot knows.

The data and the changes are the admin API's own (:mod:`adapters.http.admin.schedules`), so the
page and ``/api/schedules`` never disagree. Both forms carry the CSRF field (the guard checks
it) and answer with a redirect, so a reload never repeats them; a refused schedule comes back
as the page with the reason (400) and what was typed, and nothing scheduled.
"""

from __future__ import annotations

from urllib.parse import urlencode

from aiohttp import web

from adapters.http.admin import schedules as schedule_ops
from adapters.http.admin.chat_ops import ops_for
from adapters.http.admin.params import is_key
from adapters.http.context import CONTEXT, HTTPContext, see_other
from adapters.http.dashboard.pages import chat_url
from adapters.http.dashboard.render import render
from bot.scheduling.recurrence import EXAMPLES, ScheduleError

__all__ = ["add_routes"]

CHATS_OFFERED = 200  # known group chats the form suggests
_FIELDS = ("chat_key", "thread_id", "schedule", "prompt")


def add_routes(web_app: web.Application, context: HTTPContext) -> None:
    router = web_app.router
    router.add_get("/schedules", schedules_page)
    router.add_post("/schedules", create)
    router.add_post("/schedules/{id}/cancel", cancel)


async def schedules_page(request: web.Request) -> web.Response:
    return await _page(request)


async def _page(
    request: web.Request,
    *,
    error: str = "",
    status: int = 200,
    typed: dict[str, str] | None = None,
) -> web.Response:
    platform = request.app[CONTEXT].platform
    views = await ops_for(request).chats(limit=CHATS_OFFERED)
    groups = [v.summary for v in views if v.summary.chat_type not in ("private", "")]
    done = "" if error else request.query.get("done", "")
    return render(
        request,
        "schedules.html",
        status=status,
        schedules=schedule_ops.listed(request).schedules,
        enabled=platform.operator.schedules is not None,
        chats=[g for g in groups if platform.outbound.can_post_later(g.platform)],
        default_zone=platform.settings.schedules.timezone,
        max_prompt=platform.settings.schedules.max_prompt_chars,
        examples=EXAMPLES,
        done=done if done in ("created", "cancelled") else "",
        number=_number(request.query.get("id", "")) if not error else "",
        error=error,
        typed={name: "" for name in _FIELDS} | (typed or {}),
        chat_url=chat_url,
    )


def _number(text: str) -> str:
    """A post's number for the notice: digits only, so a link cannot make it say anything."""
    return text if text.isascii() and text.isdigit() and len(text) < 12 else ""


async def create(request: web.Request) -> web.Response:
    form = await request.post()
    typed = {name: str(form.get(name, "")) for name in _FIELDS}
    typed |= {name: typed[name].strip() for name in ("chat_key", "thread_id", "schedule")}
    chat_key = typed["chat_key"]
    if ":" not in chat_key or not is_key(chat_key) or not is_key(typed["thread_id"]):
        return await _page(request, error="Pick a chat (a key like telegram:-100123).", status=400,
                           typed=typed)  # fmt: skip
    try:
        made = await schedule_ops.create(
            request, chat_key, typed["thread_id"] or None, typed["schedule"], typed["prompt"]
        )
    except schedule_ops.SchedulesOff:
        raise web.HTTPNotFound(text="scheduled posts are off (schedules.enabled)") from None
    except ScheduleError as exc:
        return await _page(request, error=f"Not scheduled: {exc.chat_text}", status=400,
                           typed=typed)  # fmt: skip
    return see_other("/schedules?" + urlencode({"done": "created", "id": made.id}))


async def cancel(request: web.Request) -> web.Response:
    """Cancel for good, as ``DELETE /api/schedules/{id}`` does."""
    if not await schedule_ops.cancel(request, request.match_info["id"]):
        raise web.HTTPNotFound(text="no such scheduled post")
    return see_other("/schedules?done=cancelled")
