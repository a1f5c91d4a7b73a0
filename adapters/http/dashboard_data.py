"""What the dashboard's pages read and change, until the shared operations land.

Stand-ins with the shapes of :mod:`bot.storage.directory` (``ChatSummary``, ``HistoryItem``)
built from protocols every backend already has (``conversations``, ``export``, ``audit``,
``daily_usage``...), so swapping in ``adapters.http.chat_ops`` / ``admin_ops`` changes the
imports of :mod:`adapters.http.dashboard` and nothing in the templates. They read whole
conversations (``export``): fine for a dashboard, not for a big deployment.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from adapters.http.auth import Principal
from bot.context import ChatContext, ChatType, Scope
from bot.conversation.presets import Persona
from bot.plugins.context import PluginStore
from bot.storage.directory import ChatSummary, HistoryItem
from bot.storage.values import AuditEntry, ClearResult, Memory, TurnStatus, Usage

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


def chat_key_of(conversation_key: str) -> str:
    """``telegram:-100:u:7`` -> ``telegram:-100`` (a chat key is platform and chat id)."""
    return ":".join(conversation_key.split(":", 2)[:2])


async def _conversations_of(app: App, chat_key: str | None = None) -> dict[str, list[str]]:
    chats: dict[str, list[str]] = defaultdict(list)
    for key, _turns in await app.store.conversations():
        owner = chat_key_of(key)
        if chat_key is None or owner == chat_key:
            chats[owner].append(key)
    return chats


async def _items(app: App, conversation_key: str) -> list[HistoryItem]:
    """One conversation's turns (not context rows), oldest first."""
    items: dict[int, dict[str, Any]] = {}
    async for record in app.store.export(conversation_key):
        if record["status"] == TurnStatus.CONTEXT:
            continue
        turn = items.setdefault(int(record["turn"]), {"answer": ""})
        if record["seq"] == 0:
            turn.update(
                user_id=str(record.get("user_id", "")),
                user_name=str(record.get("user_name", "")),
                text=_text(record.get("content")),
                status=TurnStatus(record["status"]),
                created_at=float(record["created_at"] or 0),
            )
        elif record.get("role") == "assistant" and _text(record.get("content")):
            turn["answer"] = _text(record.get("content"))
    return [
        HistoryItem(turn_id=turn_id, conversation_key=conversation_key, **values)
        for turn_id, values in sorted(items.items())
        if "text" in values
    ]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


async def _summaries(app: App, chat_key: str | None = None) -> list[ChatSummary]:
    found = []
    for key, conversations in (await _conversations_of(app, chat_key)).items():
        items = [item for conv in conversations for item in await _items(app, conv)]
        if not items:
            continue
        platform, _, chat_id = key.partition(":")
        private = all(":u:" in conv for conv in conversations) and all(
            item.user_id == chat_id for item in items
        )
        names = sorted({item.user_name for item in items if item.user_name})
        found.append(
            ChatSummary(
                chat_key=key,
                platform=platform,
                chat_id=chat_id,
                chat_type="private" if private else "group",
                title=names[0] if private and names else "",
                turns=len(items),
                last_activity=max(item.created_at for item in items),
            )
        )
    return sorted(found, key=lambda s: s.last_activity, reverse=True)


async def list_chats(app: App, query: str = "", limit: int = 50) -> list[ChatSummary]:
    """Chats with turns, newest activity first; ``query`` in the title or key (any case)."""
    needle = query.strip().casefold()
    chats = [
        chat
        for chat in await _summaries(app)
        if not needle or needle in chat.title.casefold() or needle in chat.chat_key.casefold()
    ]
    return chats[:limit]


async def chat_summary(app: App, chat_key: str) -> ChatSummary | None:
    found = await _summaries(app, chat_key)
    return found[0] if found else None


async def history_page(
    app: App, chat_key: str, before: int | None = None, limit: int = 50
) -> list[HistoryItem]:
    """The chat's turns, newest first, below ``before`` when given."""
    conversations = (await _conversations_of(app, chat_key)).get(chat_key, [])
    items = [item for conv in conversations for item in await _items(app, conv)]
    items = [item for item in items if before is None or item.turn_id < before]
    return sorted(items, key=lambda item: item.turn_id, reverse=True)[:limit]


async def chat_audit(app: App, chat_key: str) -> list[AuditEntry]:
    """Who cleared, reset or changed the chat, newest first."""
    return list(reversed(await app.store.audit(chat_key)))


@dataclass(frozen=True, slots=True)
class ChatSettings:
    scope: Scope
    persona: Persona


def _context(summary: ChatSummary) -> ChatContext:
    kind = ChatType(summary.chat_type) if summary.chat_type in set(ChatType) else ChatType.GROUP
    return ChatContext(summary.platform, summary.chat_id, kind, summary.chat_id)


def chat_settings(app: App, summary: ChatSummary) -> ChatSettings:
    """The scope and system prompt in effect, as the chat's own messages get them."""
    ctx = _context(summary)
    return ChatSettings(app.service.scope_for(ctx), app.service.persona(ctx))


async def clear_chat(app: App, chat_key: str, caller: Principal) -> ClearResult:
    """Delete the chat's history; the audit row names the token (``http:ops``)."""
    return await app.store.clear_chat(chat_key, caller.audit_name, caller.audit_name)


async def reset_chat(app: App, chat_key: str, caller: Principal) -> int:
    """Reset every conversation of the chat (turns kept, context starts afresh)."""
    conversations = (await _conversations_of(app, chat_key)).get(chat_key, [])
    for key in conversations:
        await app.store.reset(key, chat_key, caller.audit_name, caller.audit_name)
    return len(conversations)


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
