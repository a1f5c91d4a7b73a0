"""Command line: ``python -m bot [--config FILE] COMMAND``.

Commands: chat, run, check-config, doctor, history, usage, storage, memory, knowledge.

With no command it runs the platform adapters enabled in config, or the console chat when none
is. This is the only place that configures logging and installs signal handlers. While you chat
at the console only warnings and errors are logged (to stderr), so they do not run through the
conversation; ``run`` logs at ``logging.level``.

The command line is parsed before anything else is imported (:mod:`.parser` is standard library
only): ``--help`` answers at once, and each command imports only what it uses, so
``check-config`` and ``history`` never load the app, the LLM SDK or a platform library
(:mod:`.serve` does, for ``run`` and ``chat``). For the same reason the config is loaded with
``defer_unset``: a ``${VAR}`` that is not set fails only the commands that read its section
(``history`` reads ``storage:``, not ``http:``), and ``check-config`` reports it.

Plugin modules in the working directory import the same way under the ``parlour`` script and
``python -m bot``: the directory is searched after the installed packages, so it never hides
one (the built-in ``plugins.*`` load whatever ``plugins/`` folder it holds, see
:mod:`bot.plugins.loader`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from bot.cli import collector
from bot.cli.parser import build_parser, history_usage_error
from bot.errors import ConfigError, ParlourError
from bot.guardrails.redact import Redactor, configure_logging

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.config.storage_url import StorageURL


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
    if argv is None and args.command in (None, "run", "chat"):
        # A process of its own (tests call main(argv) in theirs, whose objects must stay
        # collectable): the collector rests until the imports are done (bot.cli.collector).
        collector.pause()

    def work() -> int:
        import asyncio

        from bot.config import load_settings, secret_values

        settings = load_settings(args.config, defer_unset=True)
        redactor.add(secret_values(settings))
        configure_logging(_log_level(args, settings), redactor)
        return asyncio.run(_dispatch(args, settings, redactor))

    try:
        return _reporting(work, redactor)
    finally:
        collector.resume()


def _storage(args: argparse.Namespace) -> int:
    """``storage copy``: needs no config (both databases are on the command line), so a
    deployment can be moved without its config file at hand."""
    if args.storage_command is None:
        sys.stderr.write(args.storage_help())
        sys.stderr.write("\nerror: say which: `storage copy SRC_URL DST_URL`\n")
        return 2
    redactor = Redactor()

    def work() -> int:
        import asyncio

        from bot.cli.storage_copy import parse_copy_url

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
    from bot.cli.progress import TerminalProgress, counts_table
    from bot.cli.storage_copy import copy_storage

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
    if command == "memory":
        return await _memory(args, settings)
    if command == "knowledge":
        return await _knowledge(args, settings)
    platforms = ["console"] if command == "chat" else settings.enabled_platforms()
    settings.require_serving(platforms)
    if not platforms:
        raise ConfigError(
            "no platform is enabled: set telegram.enabled, discord.enabled or http.enabled in the"
            " config "
            "(or use `python -m bot chat` for the console)"
        )
    from bot.cli.serve import serve

    return await serve(settings, platforms)


def _check_config(settings: Settings, redactor: Redactor) -> int:
    """Print the validated config (see ``bot.doctor.config_report``), then its problems."""
    import yaml

    from bot.doctor.config_report import config_report

    report = config_report(settings)
    text = yaml.safe_dump(report.data, sort_keys=False, allow_unicode=True)
    sys.stdout.write(redactor(text))
    for warning in report.warnings:
        sys.stderr.write(redactor(f"warning: {warning.said}\n"))
    if report.errors:
        raise ConfigError("; ".join(error.said for error in report.errors))
    sys.stdout.write("config OK\n")
    return 0


def _missing_database(settings: Settings) -> bool:
    """Reports read an existing file: a typo'd path must not create an empty one. They read
    ``storage:`` alone, so only its variables must be set."""
    from bot.storage import missing_storage

    settings.require_variables("storage")
    problem = missing_storage(settings)
    if problem is None:
        return False
    sys.stderr.write(problem + "\n")
    return True


async def _history(args: argparse.Namespace, settings: Settings, redactor: Redactor) -> int:
    from bot.cli.history import history_command
    from bot.storage import open_storage

    if _missing_database(settings):
        return 1
    async with open_storage(settings) as store:
        return await history_command(args, store, redactor)


async def _memory(args: argparse.Namespace, settings: Settings) -> int:
    if args.memory_command is None:
        sys.stderr.write(args.memory_help())
        sys.stderr.write("\nerror: say which: `memory embed`\n")
        return 2
    if _missing_database(settings):
        return 1
    from bot.cli.memory import memory_command

    return await memory_command(settings)


async def _knowledge(args: argparse.Namespace, settings: Settings) -> int:
    if args.knowledge_command is None:
        sys.stderr.write(args.knowledge_help())
        sys.stderr.write(
            "\nerror: say which: `knowledge add`, `list`, `remove`, `reindex` or `unbind`\n"
        )
        return 2
    from bot.cli.knowledge import knowledge_command

    return await knowledge_command(args, settings)


def _rounded(share: float | None) -> float | None:
    return None if share is None else round(share, 4)


async def _usage(args: argparse.Namespace, settings: Settings) -> int:
    if args.days < 1:
        sys.stderr.write("--days must be at least 1\n")
        return 2
    from bot.guardrails.budgets import utc_day
    from bot.guardrails.usage import cached_share, usage_table
    from bot.storage import open_storage

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
