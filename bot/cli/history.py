"""``python -m bot history {list,export,audit,delete}``: what an operator reads from, and
deletes in, the stored history.

``export`` writes JSON lines (one conversation by key, every conversation of a chat with
``--chat``, or the whole store with ``--all``); ``audit`` lists clears, resets, persona,
scope, ambient and schedule changes with who and when; ``delete --user PLATFORM:ID`` answers
a data-subject request.
Every string written passes through the config's :class:`~bot.guardrails.redact.Redactor`,
so a key someone pasted into a chat leaves masked. Counts go to stderr, so stdout stays the
data itself (pipe it into ``jq``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from bot.cli.parser import person
from bot.guardrails.redact import Redactor
from bot.storage import Storage
from bot.text import counted
from bot.values import AuditEntry, UserDeletion

__all__ = ["history_command"]

# What each count of ``delete`` means, in the order printed.
_DELETION_WORDS = {
    "turns": "turns deleted (their messages with the answers to them)",
    "messages": "messages in those turns",
    "overheard": "overheard group messages deleted",
    "conversations": "conversations that lost messages (summaries rebuilt)",
    "memories": "memories deleted (their own and private ones)",
    "summaries": "summaries and window marks dropped",
    "deliveries": "delivery records deleted",
    "inbox": "platform updates blanked in the inbox",
    "usage_rows": "usage-ledger rows kept (tokens were spent), name blanked",
    "audit_rows": "audit entries kept (what they did as admin), name blanked",
}


async def history_command(args: argparse.Namespace, store: Storage, redactor: Redactor) -> int:
    if args.history_command == "list":
        for key, turns in await store.conversations():
            sys.stdout.write(f"{key}\t{turns} turns\n")
        return 0
    if args.history_command == "audit":
        return await _audit(args, store, redactor)
    if args.history_command == "delete":
        return await _delete(args, store)
    return await _export(args, store, redactor)


# -- export ----------------------------------------------------------------------------------


async def _export(args: argparse.Namespace, store: Storage, redactor: Redactor) -> int:
    if args.key:
        if (await store.stats(args.key)).turns_stored == 0:
            sys.stderr.write(f"no stored messages for {args.key!r} (see `history list`)\n")
            return 1
        keys = [args.key]
    else:
        keys = [key for key, _ in await store.conversations() if _in_chat(key, args.chat)]
        if not keys:
            where = f"chat {args.chat!r}" if args.chat else "the store"
            sys.stderr.write(f"no stored messages in {where} (see `history list`)\n")
            return 1
    messages = conversations = 0
    with _output(args.output) as out:
        for key in keys:
            wrote = 0
            async with contextlib.aclosing(store.export(key)) as records:
                async for record in records:
                    if args.chat and record.get("chat") != args.chat:
                        break  # a chat whose id merely starts like this one
                    if not args.key:
                        record = {"conversation": key, **record}
                    out.write(json.dumps(masked(record, redactor), ensure_ascii=False) + "\n")
                    wrote += 1
            messages += wrote
            conversations += wrote > 0
    sys.stderr.write(
        f"exported {counted(messages, 'message')} from {counted(conversations, 'conversation')}\n"
    )
    return 0


def _in_chat(conversation_key: str, chat_key: str | None) -> bool:
    """A conversation key is its chat's key, or that plus ``:u:...`` / ``:t:...``."""
    return (
        chat_key is None
        or conversation_key == chat_key
        or conversation_key.startswith(chat_key + ":")
    )


def masked(value: Any, redactor: Redactor) -> Any:
    """``value`` with every string in it (keys of tool arguments too) passed through
    ``redactor``."""
    if isinstance(value, str):
        return redactor(value)
    if isinstance(value, dict):
        return {redactor(str(k)): masked(v, redactor) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(item, redactor) for item in value]
    return value


@contextlib.contextmanager
def _output(path: str | None) -> Iterator[TextIO]:
    if not path:
        yield sys.stdout
        return
    # A one-shot CLI command: nothing else runs on this loop, blocking is fine.
    with Path(path).open("w", encoding="utf-8") as out:
        yield out


# -- audit -----------------------------------------------------------------------------------


async def _audit(args: argparse.Namespace, store: Storage, redactor: Redactor) -> int:
    entries = await store.audit(args.chat)
    if args.json:
        for entry in entries:
            sys.stdout.write(json.dumps(masked(_record(entry), redactor), ensure_ascii=False))
            sys.stdout.write("\n")
    elif entries:
        sys.stdout.write(redactor(audit_table(entries)))
    where = f" in {args.chat}" if args.chat else ""
    sys.stderr.write(f"{counted(len(entries), 'audit entry', 'audit entries')}{where}\n")
    return 0


def _record(entry: AuditEntry) -> dict[str, object]:
    return {
        "at": entry.at,
        "time": _when(entry.at),
        "chat": entry.chat_key,
        "action": entry.action.value,
        "actor_id": entry.actor_id,
        "actor_name": entry.actor_name,
        "detail": entry.detail,
        "conversation": entry.conversation_key,
    }


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def audit_table(entries: list[AuditEntry]) -> str:
    """One line per entry: when (UTC), chat, action, who, what."""
    rows = [("when", "chat", "action", "who", "what")]
    for entry in entries:
        who = f"{entry.actor_name} ({entry.actor_id})" if entry.actor_name else entry.actor_id
        what = entry.detail or (
            f"conversation {entry.conversation_key}" if entry.conversation_key else ""
        )
        rows.append((_when(entry.at), entry.chat_key, entry.action.value, who, what))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True))
        + f"  {row[4]}".rstrip()
        + "\n"
        for row in rows
    )


# -- delete ----------------------------------------------------------------------------------


async def _delete(args: argparse.Namespace, store: Storage) -> int:
    who = person(args.user)
    assert who is not None, "checked by history_usage_error"
    platform, user_id = who
    if not args.yes and not _confirmed(args.user):
        return 1
    deleted = await store.delete_user(platform, user_id)
    if args.json:
        sys.stdout.write(json.dumps({"user": args.user, **deleted.counts()}) + "\n")
    else:
        sys.stdout.write(deletion_report(args.user, deleted))
    return 0


def _confirmed(user: str) -> bool:
    if not sys.stdin.isatty():
        sys.stderr.write(
            f"not deleting {user}'s data: confirm at a terminal, or add --yes to run "
            "without asking\n"
        )
        return False
    sys.stderr.write(
        f"Delete every message and memory of {user} on every chat? This cannot be undone.\n"
        "Type 'yes' to go on: "
    )
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() != "yes":
        sys.stderr.write("nothing deleted\n")
        return False
    return True


def deletion_report(user: str, deleted: UserDeletion) -> str:
    counts = deleted.counts()
    width = max(len(str(n)) for n in counts.values())
    lines = [f"{user}:"]
    lines += [f"  {n:>{width}}  {_DELETION_WORDS[kind]}" for kind, n in counts.items()]
    return "\n".join(lines) + "\n"
