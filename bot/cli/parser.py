"""The command line's grammar: every command, option and usage check, and nothing else.

``python -m bot --help`` answers from here alone, so this module imports only the standard
library: a command's own modules (the config, the storage, the app, the LLM SDK) are imported
by :mod:`.commands` once the command line has said which are needed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.cli.subcommands import SubCommands

__all__ = ["DEFAULT_BATCH", "HISTORY_COMMANDS", "build_parser", "history_usage_error", "person"]

DEFAULT_BATCH = 1000  # rows per read and per transaction of `storage copy`

HISTORY_COMMANDS = (
    "`history list`, `history export KEY | --chat KEY | --all`, `history audit`, "
    "`history delete --user PLATFORM:ID`"
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="parlour", description="Parlour chat bot")
    parser.add_argument(
        "--config", help="config file (default: $PARLOUR_CONFIG, else ./config.yaml)"
    )
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("chat", help="chat in this terminal")
    sub.add_parser("run", help="run the platform adapters enabled in config")
    sub.add_parser("check-config", help="validate the config and print it, secrets masked")
    doctor = sub.add_parser(
        "doctor",
        help="check config, database, LLM and platforms; a fix for each failure",
        description="One row per check (ok / FAIL / warn) with what was found and, for each "
        "problem, the fix. Exit status 0 when everything needed works (warnings allowed).",
    )
    doctor.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    doctor.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how long each LLM request may take (default: 5)",
    )
    _add_history_parser(sub)
    usage = sub.add_parser("usage", help="tokens per chat and per user per day (UTC)")
    usage.add_argument("--days", type=int, default=7, help="how many days back (default: 7)")
    usage.add_argument("--chat", help="one chat, e.g. telegram:-100123 (default: every chat)")
    usage.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    _add_storage_parser(sub)
    memory = sub.add_parser("memory", help="long-term memory's vectors")
    memory.set_defaults(memory_help=memory.format_help)
    memory_sub = memory.add_subparsers(dest="memory_command", metavar="{embed}")
    memory_sub.add_parser(
        "embed",
        help="embed every memory and old message that has no vector yet (progress bar)",
        description=(
            "With memory.embeddings on (a model, or local: true), give every stored memory and"
            " every conversation's old messages (the newest 5,000 of each) a vector of the"
            " configured model, with a progress bar. The bot does the same in the background"
            " at start; this does it now. Safe to stop and run again, also beside the bot."
        ),
    )
    _add_knowledge_parser(sub)
    return parser


def _add_knowledge_parser(sub: SubCommands) -> None:
    knowledge = sub.add_parser("knowledge", help="knowledge bases' documents")
    knowledge.set_defaults(knowledge_help=knowledge.format_help)
    knowledge_sub = knowledge.add_subparsers(
        dest="knowledge_command", metavar="{add,list,remove,reindex,unbind}"
    )
    add = knowledge_sub.add_parser(
        "add",
        help="add files and folders to a base (Markdown, text, HTML, PDF, DOCX)",
        description=(
            "Read each file (folders: every known format inside, recursively), cut it into"
            " chunks and store them in the base. An unchanged file is skipped, a changed one"
            " replaces its chunks, a refused one is reported and changes nothing."
        ),
    )
    add.add_argument("base", help="a base named under knowledge.bases")
    add.add_argument("paths", nargs="+", metavar="PATH", help="files or folders")
    add.add_argument(
        "--url",
        metavar="URL",
        help="where these files are published (https://docs.example.org/): each document's"
        " source becomes URL + its path (one file and a URL not ending in /: that URL), and"
        " answers citing it link there",
    )
    listing = knowledge_sub.add_parser("list", help="a base's documents")
    listing.add_argument("base", help="a base named under knowledge.bases")
    remove = knowledge_sub.add_parser("remove", help="remove one document from a base")
    remove.add_argument("base", help="a base named under knowledge.bases")
    remove.add_argument("source", nargs="?", help="the document as `knowledge list` shows it")
    remove.add_argument(
        "--all", action="store_true", help="every document of the base, and its chat bindings"
    )
    unbind = knowledge_sub.add_parser(
        "unbind", help="take back a base's bindings made in chats with /knowledge bind"
    )
    unbind.add_argument("base", help="a base named under knowledge.bases")
    unbind.add_argument("chat", nargs="?", help="a chat key, as `knowledge list` shows it")
    unbind.add_argument("--all", action="store_true", help="from every chat that bound it")
    reindex = knowledge_sub.add_parser(
        "reindex",
        help="rebuild a base's search index from its stored chunks",
        description=(
            "Index every stored chunk of the base again, its old index entries dropped first"
            " (one transaction): after a storage copy or restore, or a change of how text is"
            " indexed. The documents themselves are not read again."
        ),
    )
    reindex.add_argument("base", help="a base named under knowledge.bases")


def _add_history_parser(sub: SubCommands) -> None:
    history = sub.add_parser("history", help="stored conversations, their audit, deleting a person")
    history.set_defaults(history_help=history.format_help)
    history_sub = history.add_subparsers(
        dest="history_command", metavar="{list,export,audit,delete}"
    )
    history_sub.add_parser("list", help="conversation keys and their turn counts")
    export = history_sub.add_parser(
        "export",
        help="conversations as JSON lines, secrets masked",
        description="Write stored messages as JSON lines: one conversation (KEY), every "
        "conversation of a chat (--chat) or every conversation stored (--all). Give one.",
    )
    export.add_argument(
        "key", nargs="?", help="conversation key, e.g. telegram:-100123 (see `history list`)"
    )
    export.add_argument(
        "--chat", metavar="KEY", help="every conversation of this chat (all scopes)"
    )
    export.add_argument("--all", action="store_true", help="every conversation stored")
    export.add_argument("-o", "--output", help="file to write (default: stdout)")
    audit = history_sub.add_parser(
        "audit",
        help="clears, resets, persona, scope, ambient and schedule changes, memory deletions:"
        " who, when, what",
    )
    audit.add_argument("--chat", metavar="KEY", help="one chat, e.g. telegram:-100123")
    audit.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    delete = history_sub.add_parser(
        "delete",
        help="delete one person's messages and memories everywhere",
        description="Delete everything one person said on one platform: their messages and "
        "the answers to them in every chat, their private conversations, their memories, and "
        "the summaries that may quote them (rebuilt from what is left). The usage ledger keeps "
        "its token counts (the money was spent) and the audit its entries, without their name.",
    )
    delete.add_argument(
        "--user", required=True, metavar="PLATFORM:ID", help="e.g. telegram:123456789"
    )
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    delete.add_argument("--json", action="store_true", help="the counts as one JSON object")


def _add_storage_parser(sub: SubCommands) -> None:
    storage = sub.add_parser("storage", help="move a deployment's data between databases")
    storage.set_defaults(storage_help=storage.format_help)
    storage_sub = storage.add_subparsers(dest="storage_command", metavar="{copy}")
    copy = storage_sub.add_parser(
        "copy",
        help="copy every row from one database to another (stop the bot first)",
        description=(
            "Copy history, settings, memories, usage, the audit trail, plugin data, deliveries "
            "and scheduled jobs from SRC_URL to DST_URL (SQLite or PostgreSQL, either way). "
            "Stop the bot first. The target's tables are created if missing; a target that "
            "already holds rows is refused unless --force. Running it again copies nothing "
            "twice. Put a PostgreSQL password in PGPASSWORD or ~/.pgpass rather than the URL."
        ),
    )
    copy.add_argument(
        "source", metavar="SRC_URL", help="e.g. sqlite:///data/parlour.db (must exist)"
    )
    copy.add_argument(
        "target", metavar="DST_URL", help="e.g. postgresql://parlour@db.internal/parlour"
    )
    copy.add_argument(
        "--force",
        action="store_true",
        help="copy into a target that already holds rows: those are kept, the others added",
    )
    copy.add_argument(
        "--batch",
        type=int,
        default=DEFAULT_BATCH,
        help=f"rows per read and per transaction (default: {DEFAULT_BATCH})",
    )
    for side in ("source", "target"):
        copy.add_argument(
            f"--{side}-jobs",
            type=Path,
            metavar="PATH",
            help=f"the {side}'s scheduler file when it is SQLite "
            "(default: <db name>.jobs.sqlite beside the database, as storage.jobs_path)",
        )
    copy.add_argument("--json", action="store_true", help="the counts as JSON lines")


def history_usage_error(args: argparse.Namespace) -> str | None:
    """Why the ``history`` command line cannot run (checked before any config is read)."""
    if args.history_command is None:
        return f"say which: {HISTORY_COMMANDS}"
    if args.history_command == "export":
        given = [name for name, value in _export_targets(args) if value]
        if len(given) != 1:
            which = "none" if not given else " and ".join(given)
            return f"history export needs one of KEY, --chat KEY or --all (got {which})"
    if args.history_command == "delete" and person(args.user) is None:
        return f"--user must be PLATFORM:ID, e.g. telegram:123456789 (got {args.user!r})"
    return None


def _export_targets(args: argparse.Namespace) -> list[tuple[str, object]]:
    return [("KEY", args.key), ("--chat", args.chat), ("--all", args.all)]


def person(user: str) -> tuple[str, str] | None:
    """``PLATFORM:ID`` split, or None when it is not one."""
    platform, _, user_id = user.partition(":")
    if not platform or not user_id.strip() or user_id != user_id.strip():
        return None
    return platform, user_id
