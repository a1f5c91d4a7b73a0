"""``doctor``'s rows for a bot that is running, asked from inside it (the dashboard's status page).

The same checks as ``python -m bot doctor``, minus what would disturb the running bot or say
something false about it: the config was valid enough to start (its warnings are still rows),
the database takes the doctor's scratch write, every LLM endpoint answers one token, and each
enabled platform's own rows, except those the caller names in ``skip`` (the HTTP adapter's
"can the port be bound" is false while it holds the port). MCP servers are not started a second
time: their live state (:mod:`bot.mcp.status`) is what to show instead. Nothing is contacted
that the config does not name.
"""

from __future__ import annotations

from collections.abc import Collection

from bot.config import Settings
from bot.doctor import Check, fail, passed, warn
from bot.doctor.config_report import config_report
from bot.doctor.database import check_database
from bot.doctor.llm import TIMEOUT, check_llm
from bot.doctor.runner import _platform as platform_rows

__all__ = ["diagnose_running"]

_CONFIG_FIX = "correct the config (`python -m bot check-config` prints what it read)"


async def diagnose_running(
    settings: Settings, *, skip: Collection[str] = (), llm_timeout: float = TIMEOUT
) -> list[Check]:
    rows = _config(settings)
    rows.append(await check_database(settings))
    rows += await check_llm(settings, llm_timeout)
    for platform in settings.enabled_platforms():
        if platform not in skip:
            rows += await platform_rows(platform, settings)
    return rows


def _config(settings: Settings) -> list[Check]:
    report = config_report(settings)
    platforms = ", ".join(settings.enabled_platforms()) or "none"
    rows = [fail("config", str(error), _CONFIG_FIX) for error in report.errors]
    if not rows:
        rows = [passed("config", f"the bot started with it; platforms: {platforms}")]
    return rows + [warn("config", str(warning), _CONFIG_FIX) for warning in report.warnings]
