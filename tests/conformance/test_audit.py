"""The audit trail (bot.storage.audit): clears, resets, persona, scope, ambient and
scheduled-post changes, and an operator's memory deletions."""

from __future__ import annotations

import pytest

from bot.storage import Storage
from bot.storage.audit import clear_detail, forget_detail
from bot.values import AuditAction, AuditEntry
from tests.conformance.conftest import answered

SCHEDULED = 'set #4 in thread 9: every monday 09:00 Europe/Berlin: "summarise the week…"'


def rows(entries: list[AuditEntry]) -> list[tuple[str, str, str, str, str]]:
    return [
        (e.action.value, e.actor_id, e.actor_name, e.detail, e.conversation_key) for e in entries
    ]


async def test_the_audit_lists_every_kind_oldest_first(storage: Storage) -> None:
    await storage.record_change(
        "tg:1", "7", "Ann", AuditAction.PERSONA, 'set (9 chars): "Be brief."'
    )
    await answered(storage, "tg:1:u:8", "hi", "hello", chat="tg:1")
    await storage.reset("tg:1:u:8", "tg:1", "8", "Bo")
    await storage.record_change("tg:1", "7", "Ann", AuditAction.SCOPE, "chat -> user")
    await storage.record_change("tg:2", "9", "Cy", AuditAction.SCOPE, "chat -> thread")
    await storage.record_change(
        "tg:1", "http:ops", "http:ops", AuditAction.FORGET, forget_detail(3)
    )
    await storage.record_change("tg:1", "7", "Ann", AuditAction.AMBIENT, "off -> on")
    await storage.record_change("tg:1", "7", "Ann", AuditAction.SCHEDULE, SCHEDULED)
    await storage.clear_chat("tg:1", "7", "Ann")
    entries = await storage.audit("tg:1")
    assert rows(entries) == [
        ("persona", "7", "Ann", 'set (9 chars): "Be brief."', ""),
        ("reset", "8", "Bo", "", "tg:1:u:8"),
        ("scope", "7", "Ann", "chat -> user", ""),
        ("forget", "http:ops", "http:ops", "deleted memory #3", ""),
        ("ambient", "7", "Ann", "off -> on", ""),
        ("schedule", "7", "Ann", SCHEDULED, ""),
        ("clear", "7", "Ann", clear_detail(1, 2), ""),
    ]
    assert {e.chat_key for e in entries} == {"tg:1"}
    times = [e.at for e in entries]
    assert times == sorted(times) and times[0] > 0
    everything = await storage.audit()
    assert [e.chat_key for e in everything].count("tg:2") == 1 and len(everything) == 8
    assert await storage.audit("tg:3") == []


async def test_every_reset_is_an_entry_not_only_the_latest(storage: Storage) -> None:
    await storage.reset("tg:1", "tg:1", "5")  # a caller without a name
    await answered(storage, "tg:1", "more", "x")
    await storage.reset("tg:1", "tg:1", "6", "Di")
    assert rows(await storage.audit("tg:1")) == [
        ("reset", "5", "", "", "tg:1"),
        ("reset", "6", "Di", "", "tg:1"),
    ]
    assert await storage.reset_point("tg:1") > 0


async def test_only_persona_scope_and_forget_are_recorded_as_changes(storage: Storage) -> None:
    for action in (AuditAction.CLEAR, AuditAction.RESET, "rename"):
        with pytest.raises(ValueError, match="not an audited change"):
            await storage.record_change("tg:1", "7", "Ann", action, "x")  # type: ignore[arg-type]
    assert await storage.audit() == []


async def test_the_trail_outlives_clear_and_retention_and_follows_a_migration(
    storage: Storage,
) -> None:
    await answered(storage, "tg:-1:u:5", "a", "b", chat="tg:-1")
    await storage.reset("tg:-1:u:5", "tg:-1", "5", "Eve")
    await storage.record_change("tg:-1", "5", "Eve", AuditAction.PERSONA, "reset to the default")
    await storage.clear_chat("tg:-1", "5", "Eve")
    await storage.delete_older_than(-1)
    await storage.migrate_chat("tg:-1", "tg:-100")
    assert await storage.audit("tg:-1") == []
    moved = await storage.audit("tg:-100")
    assert rows(moved) == [
        ("reset", "5", "Eve", "", "tg:-100:u:5"),
        ("persona", "5", "Eve", "reset to the default", ""),
        ("clear", "5", "Eve", clear_detail(1, 2), ""),
    ]
    assert {e.chat_key for e in moved} == {"tg:-100"}
