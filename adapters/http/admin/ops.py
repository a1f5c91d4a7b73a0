"""What the admin API and the dashboard both show: usage series, plugins, MCP servers, reminders.

One function per question, returning the response models of :mod:`adapters.http.admin.schemas`, so a
page and its JSON twin never disagree. Nothing here knows a plugin's internals: reminders are
the scheduler's jobs of :data:`bot.scheduling.kinds.REMINDERS_KIND`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from datetime import UTC, date, timedelta

from adapters.http.admin.schemas import (
    MCPList,
    MCPServer,
    PluginFailure,
    PluginInfo,
    PluginList,
    ReminderInfo,
    ReminderList,
    SkippedTool,
    UsageChat,
    UsageDay,
    UsageFigures,
    UsageReport,
    UsageRow,
    UsageUser,
)
from bot.guardrails.budgets import utc_day
from bot.platform.seam import Platform
from bot.scheduling.kinds import REMINDERS_KIND
from bot.scheduling.scheduler import ScheduledJob
from bot.storage.bounds import is_key
from bot.values import DailyUsage

__all__ = [
    "MAX_DAYS",
    "cancel_reminder",
    "mcp_servers",
    "plugins",
    "reminders",
    "usage",
]

MAX_DAYS = 366


class _Sum:
    __slots__ = ("cached", "completion", "prompt", "turns")

    def __init__(self) -> None:
        self.turns = self.prompt = self.completion = self.cached = 0

    def add(self, row: DailyUsage) -> None:
        self.turns += row.turns
        self.prompt += row.usage.prompt_tokens
        self.completion += row.usage.completion_tokens
        self.cached += row.usage.cached_tokens

    def figures(self) -> dict[str, int]:
        return {
            "turns": self.turns,
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "cached_tokens": self.cached,
            "total_tokens": self.prompt + self.completion,
        }


async def usage(
    platform: Platform, days: int = 30, chat: str | None = None, user: str | None = None
) -> UsageReport:
    """The ledger of the last ``days`` UTC days (today included), of one chat and/or one user
    (``user``: a user id, or ``platform:user_id``)."""
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"days must be 1-{MAX_DAYS}")
    since = utc_day(time.time() - (days - 1) * 86400)
    rows = [r for r in await platform.store.daily_usage(since, chat or None) if _is(r, user)]
    per_day: defaultdict[str, _Sum] = defaultdict(_Sum)
    per_chat: defaultdict[str, _Sum] = defaultdict(_Sum)
    per_user: defaultdict[tuple[str, str], _Sum] = defaultdict(_Sum)
    names: dict[tuple[str, str], str] = {}
    total = _Sum()
    for row in rows:
        who = (_platform(row.chat_key), row.user_id)
        for bucket in (per_day[row.day], per_chat[row.chat_key], per_user[who], total):
            bucket.add(row)
        names[who] = row.user_name or names.get(who, "")
    first = date.fromisoformat(since)
    every_day = [(first + timedelta(days=n)).isoformat() for n in range(days)]
    return UsageReport(
        since=since,
        days=[UsageDay(day=d, **per_day[d].figures()) for d in every_day],
        chats=[
            UsageChat(chat_key=key, **s.figures())
            for key, s in sorted(per_chat.items(), key=_by_tokens)
        ],
        users=[
            UsageUser(platform=p, user_id=u, user_name=names[(p, u)], **s.figures())
            for (p, u), s in sorted(per_user.items(), key=_by_tokens)
        ],
        rows=[
            UsageRow(
                day=r.day,
                chat_key=r.chat_key,
                user_id=r.user_id,
                user_name=r.user_name,
                **_one(r),
            )
            for r in rows
        ],
        total=UsageFigures(**total.figures()),
    )


def _by_tokens(item: tuple[object, _Sum]) -> tuple[int, str]:
    """Most tokens first; ties by key."""
    return (-(item[1].prompt + item[1].completion), str(item[0]))


def _one(row: DailyUsage) -> dict[str, int]:
    one = _Sum()
    one.add(row)
    return one.figures()


def _platform(chat_key: str) -> str:
    return chat_key.split(":", 1)[0]


def _is(row: DailyUsage, user: str | None) -> bool:
    """``user`` is ``platform:user_id`` or a bare id (an http id holds a colon itself:
    ``http:website:cust-1``, or bare ``website:cust-1``)."""
    if not user:
        return True
    platform = _platform(row.chat_key)
    if user.startswith(platform + ":"):
        return row.user_id == user[len(platform) + 1 :]
    return row.user_id == user


def plugins(platform: Platform) -> PluginList:
    manager = platform.operator.plugins
    if manager is None:
        return PluginList(plugins=[], failed=[])
    return PluginList(
        plugins=[
            PluginInfo(
                name=loaded.plugin.name,
                module=loaded.plugin.module,
                tools=list(loaded.plugin.tools),
                commands=list(loaded.plugin.commands),
                job_kinds=list(loaded.plugin.job_kinds),
            )
            for loaded in manager.loaded
        ],
        failed=[PluginFailure(module=m, error=e) for m, e in manager.failed.items()],
    )


def mcp_servers(platform: Platform) -> MCPList:
    mcp = platform.operator.mcp
    statuses = mcp.statuses() if mcp is not None else []
    return MCPList(
        servers=[
            MCPServer(
                name=s.name,
                transport=s.transport,
                state=s.state.value,
                tools=list(s.tools),
                skipped=[SkippedTool(name=k.name, reason=k.reason) for k in s.skipped],
                error=s.error,
                retry_in=None if s.retry_in is None else round(s.retry_in, 1),
                restarts=s.restarts,
            )
            for s in statuses
        ]
    )


def reminders(platform: Platform, chat: str | None = None) -> ReminderList:
    """Pending reminders, soonest first (of one chat)."""
    scheduler = platform.operator.scheduler
    jobs = scheduler.pending(REMINDERS_KIND) if scheduler is not None else []
    shown = [_reminder(job) for job in jobs]
    return ReminderList(
        reminders=sorted(
            (r for r in shown if not chat or r.chat_key == chat), key=lambda r: (r.next_run, r.id)
        )
    )


async def cancel_reminder(platform: Platform, job_id: str) -> bool:
    """Cancel a pending reminder for good (the plugin forgets it too); False: none such (an id
    with a character no job id has included: the job store never sees it)."""
    scheduler = platform.operator.scheduler
    if scheduler is None or not is_key(job_id):
        return False
    return await scheduler.withdraw(job_id, kind=REMINDERS_KIND) is not None


def _reminder(job: ScheduledJob) -> ReminderInfo:
    payload = job.payload
    return ReminderInfo(
        id=job.job_id,
        chat_key=str(payload.get("chat_key", "")),
        user_id=str(payload.get("user_id", "")),
        user_name=str(payload.get("user_name", "")),
        text=str(payload.get("text", "")),
        next_run=job.next_run.astimezone(UTC).isoformat(),
    )
