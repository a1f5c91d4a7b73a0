"""Command line: ``python -m bot [--config FILE] COMMAND``.

Commands: chat, run, check-config, doctor, history, usage, storage.

With no command it runs the platform adapters enabled in config, or the console chat when none
is. This is the only place that configures logging and installs signal handlers. While you chat
at the console only warnings and errors are logged (to stderr), so they do not run through the
conversation; ``run`` logs at ``logging.level``.

Plugin modules in the working directory import the same way under the ``parlour`` script and
``python -m bot``: the directory is searched after the installed packages, so it never hides
one (the built-in ``plugins.*`` load whatever ``plugins/`` folder it holds, see
:mod:`bot.plugins.loader`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import yaml

from bot.app import App
from bot.cli.adapters import load_adapter
from bot.cli.history import add_history_parser, history_command
from bot.cli.history import usage_error as history_usage_error
from bot.cli.progress import TerminalProgress, counts_table
from bot.cli.storage_copy import DEFAULT_BATCH, copy_storage, parse_copy_url
from bot.cli.subcommands import SubCommands
from bot.config import Settings, load_settings, secret_values
from bot.config.storage_url import StorageURL
from bot.doctor.adapters import check_adapter_settings
from bot.doctor.config_report import config_report
from bot.errors import ConfigError, ParlourError
from bot.guardrails.budgets import utc_day
from bot.guardrails.redact import Redactor, configure_logging
from bot.guardrails.usage import cached_share, usage_table
from bot.platform.adapter import Adapter
from bot.storage import missing_storage, open_storage

log = logging.getLogger(__name__)
SHUTDOWN_GRACE = 10.0  # seconds in-flight replies get after SIGTERM/SIGINT before cancellation


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
    add_history_parser(sub)
    usage = sub.add_parser("usage", help="tokens per chat and per user per day (UTC)")
    usage.add_argument("--days", type=int, default=7, help="how many days back (default: 7)")
    usage.add_argument("--chat", help="one chat, e.g. telegram:-100123 (default: every chat)")
    usage.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    _add_storage_parser(sub)
    return parser


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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "history" and (problem := history_usage_error(args)) is not None:
        sys.stderr.write(args.history_help())
        sys.stderr.write(f"\nerror: {problem}\n")
        return 2
    if args.command == "storage":
        return _storage(args)
    _search_working_directory()
    if args.command == "doctor":  # loads the config itself: a broken one is one of its rows
        from bot.doctor.runner import doctor

        return doctor(args.config, as_json=args.json, llm_timeout=args.timeout)
    redactor = Redactor()

    def work() -> int:
        settings = load_settings(args.config)
        redactor.add(secret_values(settings))
        configure_logging(_log_level(args, settings), redactor)
        return asyncio.run(_dispatch(args, settings, redactor))

    return _reporting(work, redactor)


def _storage(args: argparse.Namespace) -> int:
    """``storage copy``: needs no config (both databases are on the command line), so a
    deployment can be moved without its config file at hand."""
    if args.storage_command is None:
        sys.stderr.write(args.storage_help())
        sys.stderr.write("\nerror: say which: `storage copy SRC_URL DST_URL`\n")
        return 2
    redactor = Redactor()

    def work() -> int:
        source = parse_copy_url(args.source, "source")
        target = parse_copy_url(args.target, "target")
        redactor.add([p for p in (source.password(), target.password()) if p])
        configure_logging("WARNING", redactor)
        return asyncio.run(_storage_copy(args, source, target))

    return _reporting(work, redactor)


def _reporting(work: Callable[[], int], redactor: Redactor) -> int:
    """``work()``'s exit status; a failure is one redacted line and its status (config 2)."""
    try:
        return work()
    except ConfigError as exc:
        print(f"error: {redactor(str(exc))}", file=sys.stderr)  # noqa: T201
        return 2
    except (ParlourError, OSError) as exc:
        print(f"error: {redactor(str(exc))}", file=sys.stderr)  # noqa: T201
        return 1
    except KeyboardInterrupt:
        return 130


async def _storage_copy(args: argparse.Namespace, source: StorageURL, target: StorageURL) -> int:
    progress = TerminalProgress(sys.stderr) if sys.stderr.isatty() else None
    report = await copy_storage(
        source,
        target,
        force=args.force,
        batch=args.batch,
        progress=progress,
        source_jobs=args.source_jobs,
        target_jobs=args.target_jobs,
    )
    if args.json:
        for count in report.tables:
            record = {
                "table": count.table,
                "copied": count.copied,
                "already_there": count.already_there,
            }
            sys.stdout.write(json.dumps(record) + "\n")
    else:
        sys.stdout.write(counts_table(report))
    return 0


def _search_working_directory() -> None:
    """Local plugin modules import alike under ``parlour`` (which does not search the working
    directory) and ``python -m bot`` (which searches it first): last, after the installed
    packages."""
    cwd = os.getcwd()
    sys.path[:] = [entry for entry in sys.path if entry and os.path.abspath(entry) != cwd]
    sys.path.append(cwd)


def _log_level(args: argparse.Namespace, settings: Settings) -> str:
    """The console chat shows the conversation on the terminal: INFO lines would run through it."""
    chatting = args.command == "chat" or (args.command is None and not settings.enabled_platforms())
    level = settings.logging.level
    return "WARNING" if chatting and level in ("DEBUG", "INFO") else level


async def _dispatch(args: argparse.Namespace, settings: Settings, redactor: Redactor) -> int:
    command = args.command
    if command is None:
        command = "run" if settings.enabled_platforms() else "chat"
    if command == "check-config":
        return _check_config(settings, redactor)
    if command == "history":
        return await _history(args, settings, redactor)
    if command == "usage":
        return await _usage(args, settings)
    if command == "chat":
        return await _serve(settings, ["console"])
    platforms = settings.enabled_platforms()
    if not platforms:
        raise ConfigError(
            "no platform is enabled: set telegram.enabled, discord.enabled or http.enabled in the"
            " config "
            "(or use `python -m bot chat` for the console)"
        )
    return await _serve(settings, platforms)


def _check_config(settings: Settings, redactor: Redactor) -> int:
    """Print the validated config (see ``bot.doctor.config_report``), then its problems."""
    report = config_report(settings)
    text = yaml.safe_dump(report.data, sort_keys=False, allow_unicode=True)
    sys.stdout.write(redactor(text))
    for warning in report.warnings:
        sys.stderr.write(redactor(f"warning: {warning}\n"))
    if report.errors:
        raise ConfigError("; ".join(report.errors))
    sys.stdout.write("config OK\n")
    return 0


def _missing_database(settings: Settings) -> bool:
    """Reports read an existing file: a typo'd path must not create an empty one."""
    problem = missing_storage(settings)
    if problem is None:
        return False
    sys.stderr.write(problem + "\n")
    return True


async def _history(args: argparse.Namespace, settings: Settings, redactor: Redactor) -> int:
    if _missing_database(settings):
        return 1
    async with open_storage(settings) as store:
        return await history_command(args, store, redactor)


def _rounded(share: float | None) -> float | None:
    return None if share is None else round(share, 4)


async def _usage(args: argparse.Namespace, settings: Settings) -> int:
    if args.days < 1:
        sys.stderr.write("--days must be at least 1\n")
        return 2
    if _missing_database(settings):
        return 1
    since = utc_day(time.time() - (args.days - 1) * 86400)
    async with open_storage(settings) as store:
        rows = await store.daily_usage(since, args.chat)
    if args.json:
        for row in rows:
            record = {
                "day": row.day,
                "chat": row.chat_key,
                "user_id": row.user_id,
                "user_name": row.user_name,
                "turns": row.turns,
                "prompt_tokens": row.usage.prompt_tokens,
                "cached_tokens": row.usage.cached_tokens,
                "completion_tokens": row.usage.completion_tokens,
                "total_tokens": row.usage.total_tokens,
                "cached_share": _rounded(cached_share(row.usage)),
            }
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        return 0
    if not rows:
        sys.stdout.write(f"no usage since {since}\n")
        return 0
    sys.stdout.write(usage_table(rows))
    return 0


async def _serve(settings: Settings, names: list[str]) -> int:
    factories = [load_adapter(name, settings.adapters) for name in names]
    for name in names:
        check_adapter_settings(name, settings)
    async with App(settings) as app:
        adapters: list[Adapter] = [factory(app.platform) for factory in factories]
        loop = asyncio.get_running_loop()

        runs = [app.adapter_runs.start(adapter) for adapter in adapters]  # watched: /status
        stopping: set[asyncio.Task[None]] = set()
        signals = 0

        def force() -> None:
            log.warning("in-flight replies did not finish in time; cancelling them")
            for run in runs:
                run.cancel()

        def shut_down() -> None:
            nonlocal signals
            signals += 1
            if signals > 1:
                force()  # a second signal: stop now
                return
            log.info("shutting down: finishing in-flight replies (up to %.0fs)", SHUTDOWN_GRACE)
            loop.call_later(SHUTDOWN_GRACE, force)
            for adapter in adapters:
                task = loop.create_task(adapter.stop())
                stopping.add(task)
                task.add_done_callback(stopping.discard)

        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, shut_down)
        try:
            results = await asyncio.gather(*runs, return_exceptions=True)
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)
        failed = False
        for adapter, result in zip(adapters, results, strict=True):
            if isinstance(result, ConfigError):  # a sentence for the operator, no traceback
                log.error("adapter %s stopped: %s", adapter.name, result)
                failed = True
            elif isinstance(result, BaseException) and not isinstance(
                result, asyncio.CancelledError
            ):
                log.error("adapter %s stopped with an error", adapter.name, exc_info=result)
                failed = True
        return 1 if failed else 0
