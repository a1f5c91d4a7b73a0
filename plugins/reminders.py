"""The ``reminders`` plugin: "remind me in 10 minutes to stretch", "at 18:00 tomorrow ...".

The model turns the user's words into an ISO 8601 time or a delay; the tool stores the reminder
in the plugin's own store (the source of truth) and schedules a job that refers to it by id. At
the time, the bot posts in the same chat and thread, addressing the user by name. Reminders
survive restarts: at start every stored reminder is scheduled again, and one that fell due
while the bot was down fires at once. Users list and cancel their own reminders. A Telegram
group's reminders follow it when it becomes a supergroup (``plugin.on_chat_moved``).

With replicas, a reminder being sent is marked (``firing_since``) until it is done: a replica that
starts meanwhile schedules it again (it reads every stored reminder), and that second run must
not post it twice. A mark older than ``IN_FLIGHT`` is a run cut short (its process died): the
next start schedules the reminder for when the mark goes stale, so it is still sent.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field, field_validator

from bot.plugins import REMINDERS_KIND, Plugin, PluginStore, ToolContext, tool
from plugins.clock import find_zone

if TYPE_CHECKING:  # annotations only: importing this plugin loads no scheduler (check-config)
    from bot.plugins import Scheduler

log = logging.getLogger(__name__)

JOB_KIND = REMINDERS_KIND  # named in bot, so the admin API lists reminders without this module
MAX_AHEAD = timedelta(days=366)
RETRY_DELAY = timedelta(minutes=5)
MAX_ATTEMPTS = 12  # an hour of retries while the chat's platform is not connected
IN_FLIGHT = timedelta(minutes=10)  # longer than any send with its retries


class Settings(BaseModel):
    timezone: str = Field("UTC", description="zone for times given without an offset")
    max_per_user: int = Field(50, ge=1, description="pending reminders one user may have")

    @field_validator("timezone")
    @classmethod
    def _known(cls, value: str) -> str:
        if find_zone(value) is None:
            raise ValueError(f"unknown time zone {value!r}")
        return value


class Reminder(BaseModel):
    id: int
    platform: str
    chat_id: str
    thread_id: str | None
    user_id: str
    user_name: str
    text: str
    due: datetime
    attempts: int = 0
    firing_since: datetime | None = None  # being sent (by any replica) since then


@tool(timeout=10)
async def set_reminder(
    ctx: ToolContext,
    text: Annotated[str, Field(min_length=1, max_length=1000, description="what to remind of")],
    at: Annotated[
        str | None,
        Field(
            description="ISO 8601 date-time, e.g. 2026-12-01T18:00+01:00; include the user's UTC"
            " offset when known, else the bot's configured time zone is used"
        ),
    ] = None,
    in_minutes: Annotated[
        float | None, Field(gt=0, description="or: how many minutes from now")
    ] = None,
) -> str:
    """Set a reminder: at the given time the bot posts the text in this chat for the user.

    Give either `at` (an ISO 8601 date-time) or `in_minutes`.
    """
    settings = _settings(ctx)
    now = datetime.now(UTC)
    if not ctx.outbound.can_post_later(ctx.chat.platform):
        return (
            f"Error: reminders cannot be delivered on {ctx.chat.platform}: the bot can only"
            " answer there, never post later. Tell the user."
        )
    if (at is None) == (in_minutes is None):
        return "Error: give exactly one of `at` (ISO 8601 date-time) or `in_minutes`."
    if in_minutes is not None:
        due = now + timedelta(minutes=in_minutes)
    else:
        assert at is not None
        try:
            parsed = datetime.fromisoformat(at.strip().replace("Z", "+00:00"))
        except ValueError:
            return f"Error: {at!r} is not an ISO 8601 date-time like 2026-12-01T18:00."
        zone = find_zone(settings.timezone)
        due = (parsed.replace(tzinfo=zone) if parsed.tzinfo is None else parsed).astimezone(UTC)
    if due <= now - timedelta(seconds=30):
        return "Error: that time has already passed. Ask the user for a time in the future."
    if due - now > MAX_AHEAD:
        return "Error: reminders can be at most a year ahead."
    store, chat = ctx.store, ctx.chat
    mine = [r for r in await _all(store) if r.user_id == chat.user_id]
    if len(mine) >= settings.max_per_user:
        return f"Error: the user already has {len(mine)} reminders; cancel some first."
    reminder = Reminder(
        id=await store.increment("next_id"),  # atomic: parallel calls get distinct ids
        platform=chat.platform,
        chat_id=chat.chat_id,
        thread_id=chat.thread_id,
        user_id=chat.user_id,
        user_name=chat.user_name or chat.user_id,
        text=text.strip(),
        due=due,
    )
    # Shielded: a cancelled tool call must not leave a stored reminder without its job.
    await asyncio.shield(_save_and_schedule(store, ctx.scheduler, reminder))
    return f"Reminder #{reminder.id} set for {_when(reminder.due, settings)}: {reminder.text}"


@tool(timeout=10)
async def list_reminders(ctx: ToolContext) -> str:
    """List the user's pending reminders (id, time, text)."""
    settings = _settings(ctx)
    mine = [r for r in await _all(ctx.store) if _owns(ctx, r)]
    elsewhere = 0
    if not ctx.chat.is_private:  # a group must not see what was set in a private chat
        elsewhere = sum(1 for r in mine if r.chat_id != ctx.chat.chat_id)
        mine = [r for r in mine if r.chat_id == ctx.chat.chat_id]
    if not mine:
        more = f" here ({elsewhere} in other chats)" if elsewhere else ""
        return f"The user has no pending reminders{more}."
    lines = [f"#{r.id} {_when(r.due, settings)}: {r.text}" for r in sorted(mine, key=_due)]
    if elsewhere:
        lines.append(f"(and {elsewhere} set in other chats)")
    return "\n".join(lines)


@tool(timeout=10)
async def cancel_reminder(
    ctx: ToolContext,
    reminder_id: Annotated[int, Field(description="the reminder's number, from list_reminders")],
) -> str:
    """Cancel one of the user's reminders by its number."""
    reminder = await _load(ctx.store, reminder_id)
    if reminder is None or not _owns(ctx, reminder):
        return f"Error: the user has no reminder #{reminder_id}."
    await ctx.store.delete(_key(reminder_id))
    if ctx.scheduler is not None:
        ctx.scheduler.cancel(_job_id(reminder_id))
    return f"Cancelled reminder #{reminder_id}: {reminder.text}"


async def setup(plugin: Plugin) -> None:
    if plugin.scheduler is None:
        raise RuntimeError("reminders need the scheduler")
    scheduler = plugin.scheduler
    store = plugin.store

    async def fire(job_id: str, payload: dict[str, Any]) -> None:
        reminder = await _load(store, int(payload["id"]))
        if reminder is None:
            return  # cancelled after the job was queued, or sent by an earlier run
        now = datetime.now(UTC)
        if reminder.firing_since is not None and now - reminder.firing_since < IN_FLIGHT:
            return  # another run is sending it (scheduled again by a replica's start)
        if not plugin.outbound.can_send(reminder.platform):
            # That platform's adapter is not running here (a console session on the same
            # data): keep the reminder for when it is, without using up its attempts.
            later = reminder.model_copy(update={"due": datetime.now(UTC) + RETRY_DELAY})
            await _save_and_schedule(store, scheduler, later)
            return
        marked = reminder.model_copy(update={"firing_since": now})
        await store.set(_key(reminder.id), marked.model_dump(mode="json"))
        text = f"⏰ {reminder.user_name}, you asked me to remind you: {reminder.text}"
        try:
            sent = await plugin.outbound.send(
                reminder.platform, reminder.chat_id, reminder.thread_id, text
            )
        except asyncio.CancelledError:  # shutdown: unmarked, the next start sends it at once
            # as stored now: a chat move meanwhile (chat_moved) is kept
            if (current := await _load(store, reminder.id)) is not None:
                unmarked = current.model_copy(update={"firing_since": reminder.firing_since})
                await store.set(_key(reminder.id), unmarked.model_dump(mode="json"))
            raise
        if sent or reminder.attempts + 1 >= MAX_ATTEMPTS:
            await store.delete(_key(reminder.id))
            if not sent:
                log.error("reminder %d dropped: chat %s unreachable", reminder.id, reminder.chat_id)
            return
        if (current := await _load(store, reminder.id)) is None:
            return  # cancelled while we were trying
        retry = current.model_copy(  # as stored now: a chat move meanwhile is kept
            update={
                "attempts": reminder.attempts + 1,
                "due": datetime.now(UTC) + RETRY_DELAY,
                "firing_since": None,
            }
        )
        await _save_and_schedule(store, scheduler, retry)

    async def withdrawn(job_id: str, payload: dict[str, Any]) -> None:
        """Cancelled from outside (the admin API): forget it, or the next start sends it."""
        await store.delete(_key(int(payload["id"])))

    async def chat_moved(old_chat_key: str, new_chat_key: str) -> None:
        """A group became a supergroup (a new chat id): its reminders are listed and sent
        there. One being sent keeps its mark, so it is not sent twice."""
        for reminder in await _all(store):
            prefix = f"{reminder.platform}:"
            if prefix + reminder.chat_id != old_chat_key or not new_chat_key.startswith(prefix):
                continue
            current = await _load(store, reminder.id)
            if current is None:
                continue  # sent or cancelled meanwhile
            moved = current.model_copy(update={"chat_id": new_chat_key.removeprefix(prefix)})
            await _save_and_schedule(store, scheduler, moved)
            log.info("reminder %d moved to %s", reminder.id, new_chat_key)

    plugin.on_job(JOB_KIND, fire, on_cancel=withdrawn)
    plugin.on_chat_moved(chat_moved)
    for tool_func in (set_reminder, list_reminders, cancel_reminder):
        plugin.add_tool(tool_func)
    # Our store is the source of truth: schedule every stored reminder again (a lost or stale
    # job file loses nothing; a reminder due while the bot was down fires at start).
    for reminder in await _all(store):
        _schedule(scheduler, reminder)


async def _save_and_schedule(
    store: PluginStore, scheduler: Scheduler | None, reminder: Reminder
) -> None:
    await store.set(_key(reminder.id), reminder.model_dump(mode="json"))
    _schedule(scheduler, reminder)


def _schedule(scheduler: Scheduler | None, reminder: Reminder) -> None:
    if scheduler is None:
        raise RuntimeError("reminders need the scheduler")
    due = reminder.due
    if reminder.firing_since is not None:  # in flight, or cut short: once that run is surely over
        due = max(due, reminder.firing_since + IN_FLIGHT)
    payload = {  # what the admin API lists (bot.plugins.REMINDERS_KIND); fire reads the id
        "id": reminder.id,
        "chat_key": f"{reminder.platform}:{reminder.chat_id}",
        "user_id": reminder.user_id,
        "user_name": reminder.user_name,
        "text": reminder.text,
    }
    scheduler.at(JOB_KIND, _job_id(reminder.id), due, payload)


async def _all(store: PluginStore) -> list[Reminder]:
    return [Reminder.model_validate(value) for _, value in await store.items("reminder:")]


async def _load(store: PluginStore, reminder_id: int) -> Reminder | None:
    value = await store.get(_key(reminder_id))
    return None if value is None else Reminder.model_validate(value)


def _owns(ctx: ToolContext, reminder: Reminder) -> bool:
    return reminder.platform == ctx.chat.platform and reminder.user_id == ctx.chat.user_id


def _settings(ctx: ToolContext) -> Settings:
    return ctx.settings if isinstance(ctx.settings, Settings) else Settings()


def _when(due: datetime, settings: Settings) -> str:
    zone = find_zone(settings.timezone)
    local = due.astimezone(zone)
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()}"


def _due(reminder: Reminder) -> datetime:
    return reminder.due


def _key(reminder_id: int) -> str:
    return f"reminder:{reminder_id:010d}"


def _job_id(reminder_id: int) -> str:
    return f"reminders:{reminder_id}"
