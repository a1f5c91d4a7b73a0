"""Run every doctor check in order: config, database, LLM endpoints, MCP servers, each enabled
platform.

A config that does not load is itself the first row (its message, no traceback), and nothing
else can be checked. A platform's rows come from its adapter's ``diagnose(settings)``; an
adapter without one gets a row saying so, and a check that itself crashes becomes a FAIL row
rather than ending the run.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from bot.config import Settings, load_settings, resolve_path, secret_values
from bot.doctor import Check, exit_code, fail, passed, warn
from bot.doctor.adapters import check_adapter_settings, load_diagnose
from bot.doctor.config_report import CONFIG_FIX, Problem, config_report
from bot.doctor.database import check_database
from bot.doctor.embeddings import check_embeddings
from bot.doctor.llm import TIMEOUT, check_llm
from bot.doctor.report import json_lines, table
from bot.errors import ConfigError
from bot.guardrails.redact import Redactor, configure_logging

__all__ = ["diagnose", "doctor", "run_doctor"]

log = logging.getLogger(__name__)

MCP_TIMEOUT = 30.0  # seconds for an MCP server to start and list its tools (as connect_timeout)

_LOAD_FIX = {  # a config that does not load: what to do depends on why
    "config file not found": "give the right path: --config FILE, or PARLOUR_CONFIG",
    "cannot read config file": "let the bot's user read the file, saved as UTF-8",
}


def doctor(
    config: str | None,
    *,
    as_json: bool = False,
    llm_timeout: float = TIMEOUT,
    out: TextIO | None = None,
) -> int:
    """``python -m bot doctor``: print the table (or JSON lines); 0 when all that is needed
    works, 1 otherwise."""
    redactor = Redactor()
    configure_logging("WARNING", redactor)  # libraries' warnings, masked like the rows
    checks = asyncio.run(run_doctor(config, redactor, llm_timeout=llm_timeout))
    write = json_lines if as_json else table
    (out or sys.stdout).write(write(checks, redactor))
    return exit_code(checks)


async def run_doctor(
    config: str | None, redactor: Redactor, *, llm_timeout: float = TIMEOUT
) -> list[Check]:
    """Every row; the config's secrets are added to ``redactor`` as soon as it loads."""
    try:
        settings = load_settings(config, defer_unset=True)
    except ConfigError as exc:
        return [_row(fail, _load_problem(exc))]
    redactor.add(secret_values(settings))
    return await diagnose(settings, resolve_path(config), llm_timeout=llm_timeout)


async def diagnose(
    settings: Settings,
    path: Path | None = None,
    *,
    llm_timeout: float = TIMEOUT,
    mcp_timeout: float = MCP_TIMEOUT,
) -> list[Check]:
    """Every row for loaded ``settings``; ``mcp_timeout`` caps each server's ``connect_timeout``."""
    rows = _config(settings, path)
    database = _unchecked("database", settings, "storage") or await check_database(settings)
    rows.append(database)
    if database.ok and settings.knowledge.bases:
        from bot.doctor.knowledge import check_knowledge

        rows += await check_knowledge(settings)
    unchecked = _unchecked("llm", settings, "llm") or _keyless(settings)
    rows += [unchecked] if unchecked else await check_llm(settings, llm_timeout)
    if not unchecked and not _unchecked("memory", settings, "memory"):
        rows += await check_embeddings(settings, llm_timeout)
    if settings.mcp.servers and (unchecked := _unchecked("mcp", settings, "mcp")):
        rows.append(unchecked)
    elif settings.mcp.servers:  # the MCP SDK is imported only for a config that names servers
        from bot.doctor.mcp import check_mcp

        rows += await check_mcp(settings, mcp_timeout)
    for platform in settings.enabled_platforms():
        rows += await _platform(platform, settings)
    return rows


def _config(settings: Settings, path: Path | None) -> list[Check]:
    report = config_report(settings)
    source = str(path) if path is not None else "no config file (defaults and environment)"
    if report.errors:
        rows = [_row(fail, error) for error in report.errors]
    else:
        platforms = ", ".join(settings.enabled_platforms()) or "none (console chat only)"
        rows = [passed("config", f"{source}: valid; platforms: {platforms}")]
    rows += [_row(warn, warning) for warning in report.warnings]
    return rows


def _row(kind: Callable[[str, str, str], Check], problem: Problem) -> Check:
    """A config problem as a row: its text is what was found, its own fix the fix line."""
    return kind("config", problem.text, problem.fix)


def _load_problem(exc: ConfigError) -> Problem:
    if exc.fix:
        return Problem.of(exc)
    text = str(exc)
    fix = next((f for start, f in _LOAD_FIX.items() if text.startswith(start)), CONFIG_FIX)
    return Problem(text, fix)


def _unchecked(name: str, settings: Settings, section: str) -> Check | None:
    """A row saying why ``section``'s check cannot run: it needs a variable that is not set
    (checking what is left would check something else, e.g. the default database)."""
    missing = settings.unset_variables(section)
    if not missing:
        return None
    names = ", ".join(dict.fromkeys(v.name for v in missing))
    return fail(
        name,
        f"not checked: {section}: needs {names}, not set",
        f"set {names} in the environment the bot runs in (the config rows say where)",
    )


def _keyless(settings: Settings) -> Check | None:
    """Without the key it needs, the endpoint can only refuse: say so instead of asking it."""
    try:
        settings.llm.check_key()
    except ConfigError as exc:
        return fail("llm", f"not checked: {exc.problem}", exc.fix)
    return None


async def _platform(platform: str, settings: Settings) -> list[Check]:
    if row := _unchecked(platform, settings, platform):
        return [row]
    try:
        check_adapter_settings(platform, settings)
    except ConfigError:
        return []  # its section does not validate (or its module is missing): a config row
    diagnose_platform = load_diagnose(platform, settings.adapters)
    if diagnose_platform is None:
        module = settings.adapters.get(platform, "?")
        return [warn(platform, f"{module} has no diagnose(settings): not checked", "")]
    try:
        return await diagnose_platform(settings)
    except Exception as exc:  # a diagnosis must not end with a traceback
        log.debug("doctor: %s checks failed", platform, exc_info=True)
        return [fail(platform, f"the checks themselves failed: {type(exc).__name__}: {exc}", "")]
