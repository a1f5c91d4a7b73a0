"""An ``App`` under test: :func:`offline_settings` to start one against the fake LLM, and
:func:`run_command` to type a command into it.

In production a plugin that fails to load is logged and the bot starts without it. In a test that
hides the cause: the model's scripted tool call finds no tool and the assertion fails on the
bot's apology, the ``ModuleNotFoundError`` only in the captured log. So the plugins a test names
here load as required, and one that cannot be imported or set up fails the test with its error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bot.config import Settings, settings_from_mapping

if TYPE_CHECKING:
    from bot.context import ChatContext
    from bot.conversation.commands import Commands
    from bot.plugins.commands import CommandResult
    from bot.testing.llm.server import FakeLLM

__all__ = ["offline_settings", "run_command"]

PluginName = str | Mapping[str, Any]


def offline_settings(
    fake_llm: FakeLLM,
    tmp_path: Path,
    *,
    plugins: Sequence[PluginName] | None = None,
    config: Mapping[str, Any] | None = None,
) -> Settings:
    """Settings for ``App(settings)`` in a test: the model is ``fake_llm``, the database a file
    in ``tmp_path``.

    ``plugins`` (names, or ``{"module": ..., "settings": {...}}`` as in ``config.yaml``) replace
    the default set and load as required: ``async with App(settings)`` raises the
    :class:`~bot.plugins.PluginError` of one that cannot be imported or set up (without
    ``plugins`` the built-in ones load as usual). ``config`` adds any other section; ``llm`` and
    ``storage`` keys are merged over the fake's.
    """
    raw: dict[str, Any] = {
        "llm": {"base_url": fake_llm.base_url},
        "storage": {"path": str(tmp_path / "bot.db")},
    }
    for key, value in (config or {}).items():
        if key in ("plugins", "plugins_required"):
            raise ValueError("name the plugins with offline_settings(..., plugins=[...])")
        if isinstance(value, Mapping) and isinstance(raw.get(key), dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    if plugins is not None:
        raw["plugins"] = [_required(entry) for entry in plugins]
    return settings_from_mapping(raw)


def _required(entry: PluginName) -> dict[str, Any]:
    if isinstance(entry, str):
        return {"module": entry, "required": True}
    return {**entry, "required": True}


class RunningApp(Protocol):
    """What :func:`run_command` needs of a started ``bot.App``."""

    @property
    def commands(self) -> Commands: ...


async def run_command(app: RunningApp, ctx: ChatContext, text: str) -> CommandResult:
    """Run ``text`` (``"/roll 2d6"``) as ``ctx``'s user typed it in that chat.

    It passes the checks an adapter's command does (access lists and rates, the chat's preset
    plugins, ``admin_only``): set ``is_admin=True`` on ``ctx`` to act as a chat admin.
    """
    if not text.startswith("/") or len(text) < 2 or text[1].isspace():
        raise ValueError(f"a command starts with /name, got {text!r}")
    head, *args = text[1:].split(None, 1)
    name = head.split("@", 1)[0]  # "/roll@my_bot 2d6", as Telegram groups send it
    return await app.commands.handle(ctx, name, args[0] if args else "")
