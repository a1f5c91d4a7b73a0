"""What the dashboard's pages read and change.

Chats, their history pages, clear and reset come from the chat directory
(:mod:`bot.storage.directory`) and :mod:`adapters.http.chat_ops`, shared with the admin API;
usage, reminders and plugin states are read here.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from adapters.http.auth import Principal
from adapters.http.chat_ops import ChatOps, UnknownChat
from bot.context import Scope
from bot.conversation.presets import Persona
from bot.plugins.context import PluginStore
from bot.storage.directory import ChatSummary, HistoryItem
from bot.storage.values import AuditEntry, ClearResult, Memory, Usage

if TYPE_CHECKING:
    from bot.app import App

__all__ = [
    "ChatSettings",
    "PluginState",
    "ReminderRow",
    "UsageReport",
    "cancel_reminder",
    "chat_audit",
    "chat_settings",
    "chat_summary",
    "clear_chat",
    "delete_memory",
    "history_page",
    "list_chats",
    "list_memories",
    "plugin_states",
    "reminders",
    "reset_chat",
    "usage_report",
]


async def list_chats(app: App, query: str = "", limit: int = 50) -> list[ChatSummary]:
    """Chats with turns, newest activity first; ``query`` in the title or key (any case)."""
    return await app.store.list_chats(query.strip(), limit)


async def chat_summary(app: App, chat_key: str) -> ChatSummary | None:
    return await app.store.chat_summary(chat_key)


async def history_page(
    app: App, chat_key: str, before: int | None = None, limit: int = 50
) -> list[HistoryItem]:
    """The chat's turns, newest first, below ``before`` when given."""
    return await app.store.history_page(chat_key, before, limit)


async def chat_audit(app: App, chat_key: str) -> list[AuditEntry]:
    """Who cleared, reset or changed the chat, newest first."""
    return list(reversed(await app.store.audit(chat_key)))


@dataclass(frozen=True, slots=True)
class ChatSettings:
    scope: Scope
    persona: Persona


def chat_settings(app: App, summary: ChatSummary) -> ChatSettings:
    """The scope and system prompt in effect, as the chat's own messages get them."""
    view = ChatOps(app).view(summary)
    return ChatSettings(view.scope, view.persona)


async def clear_chat(app: App, chat_key: str, caller: Principal) -> ClearResult:
    """Delete the chat's history; the audit row names the token (``http:ops``)."""
    try:
        return await ChatOps(app).clear(chat_key, caller)
    except UnknownChat:  # nothing stored: nothing to clear, nothing audited
        return ClearResult(turns=0, messages=0)


async def reset_chat(app: App, chat_key: str, caller: Principal) -> int:
    """Reset every conversation of the chat (turns kept, context starts afresh)."""
    try:
        return len(await ChatOps(app).reset(chat_key, caller))
    except UnknownChat:
        return 0


async def list_memories(app: App, chat_key: str) -> list[Memory]:
    return await app.store.list_memories(chat_key, limit=200)


async def delete_memory(app: App, chat_key: str, memory_id: int) -> bool:
    return await app.store.delete_memory(memory_id, chat_key=chat_key, user_id=None)


@dataclass(frozen=True, slots=True)
class UsageRow:
    label: str
    turns: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class UsageReport:
    days: list[UsageRow]  # oldest first, every day of the period (empty days too)
    chats: list[UsageRow]  # most tokens first
    users: list[UsageRow]


async def usage_report(app: App, days: int = 14) -> UsageReport:
    today = datetime.now(UTC).date()
    first = today - timedelta(days=days - 1)
    rows = await app.store.daily_usage(first.isoformat())
    by_day: dict[str, list[Usage]] = {(first + timedelta(n)).isoformat(): [] for n in range(days)}
    by_chat: dict[str, list[tuple[int, Usage]]] = defaultdict(list)
    by_user: dict[str, list[tuple[int, Usage]]] = defaultdict(list)
    for row in rows:
        by_day.setdefault(row.day, []).append(row.usage)
        by_chat[row.chat_key].append((row.turns, row.usage))
        who = row.user_name or row.user_id or "(the bot)"
        by_user[f"{who} · {row.chat_key.split(':', 1)[0]}"].append((row.turns, row.usage))

    def total(label: str, parts: list[tuple[int, Usage]]) -> UsageRow:
        return UsageRow(label, sum(t for t, _ in parts), _sum(u for _, u in parts))

    def ranked(groups: dict[str, list[tuple[int, Usage]]]) -> list[UsageRow]:
        found = [total(label, parts) for label, parts in groups.items()]
        return sorted(found, key=lambda r: r.usage.total_tokens, reverse=True)

    return UsageReport(
        days=[UsageRow(day, 0, _sum(usages)) for day, usages in sorted(by_day.items())],
        chats=ranked(by_chat),
        users=ranked(by_user),
    )


def _sum(usages: Any) -> Usage:
    prompt = completion = cached = 0
    for usage in usages:
        prompt += usage.prompt_tokens
        completion += usage.completion_tokens
        cached += usage.cached_tokens
    return Usage(prompt, completion, cached)


@dataclass(frozen=True, slots=True)
class ReminderRow:
    reminder_id: int
    chat_key: str
    user_name: str
    text: str
    due: str  # ISO 8601, UTC


def _reminder_store(app: App) -> PluginStore:
    return PluginStore(app.store, "reminders")  # the reminders plugin's own store


async def reminders(app: App) -> list[ReminderRow]:
    rows = []
    for _key, value in await _reminder_store(app).items("reminder:"):
        rows.append(
            ReminderRow(
                reminder_id=int(value["id"]),
                chat_key=f"{value['platform']}:{value['chat_id']}",
                user_name=str(value.get("user_name", "")),
                text=str(value.get("text", "")),
                due=str(value.get("due", "")),
            )
        )
    return sorted(rows, key=lambda r: r.due)


async def cancel_reminder(app: App, reminder_id: int) -> bool:
    found = await _reminder_store(app).delete(f"reminder:{reminder_id:010d}")
    if app.scheduler is not None:
        app.scheduler.cancel(f"reminders:{reminder_id}")
    return found


@dataclass(frozen=True, slots=True)
class PluginState:
    name: str
    kind: str  # "plugin" or "mcp"
    state: str  # "loaded", "failed", or an MCP server's state
    detail: str  # tools offered, or the error


def plugin_states(app: App) -> list[PluginState]:
    states = []
    if app.plugins is not None:
        for loaded in app.plugins.loaded:
            tools = ", ".join(loaded.plugin.tools) or "no tools"
            states.append(PluginState(loaded.plugin.name, "plugin", "loaded", tools))
        for module, error in app.plugins.failed.items():
            states.append(PluginState(module, "plugin", "failed", error))
    if app.mcp is not None:
        for status in app.mcp.statuses():
            detail = status.error or ", ".join(status.tools) or "no tools"
            states.append(PluginState(status.name, "mcp", str(status.state), detail))
    return states
