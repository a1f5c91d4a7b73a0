"""Plugins: tools the model can call, chat commands, scheduled jobs.

A plugin module::

    from pydantic import BaseModel
    from bot.plugins import Plugin, ToolContext, tool

    class Settings(BaseModel):          # optional: config's `settings:` are checked against it
        greeting: str = "Hello"

    @tool
    async def greet(ctx: ToolContext, name: str) -> str:
        '''Greet someone by name.'''
        return f"{ctx.settings.greeting}, {name}!"

    def setup(plugin: Plugin) -> None:
        plugin.add_tool(greet)

and in ``config.yaml``: ``plugins: [plugins.clock, {module: my_plugin, settings: {...}}]``.

Everything a plugin needs is importable from here (the built-in plugins import nothing else of
``bot``; ``tests/product/app/test_public_api.py`` holds them to it): tools and their context,
commands (``ChatContext``, ``CommandResult``, ``Scope``), ``UserFacingError``, the memory
store and the scheduler a plugin may be handed, and the quoting helpers for text that goes
into a prompt. The loader's and the registry's machinery (``PluginManager``, ``ToolRegistry``,
``ENTRY_POINT_GROUP``) still load from here for older code, but are not part of ``__all__``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from bot.context import ChatContext, ChatType, Scope, display_name
    from bot.errors import UserFacingError
    from bot.memory.store import MemoryStore
    from bot.plugins.commands import CommandResult
    from bot.plugins.context import PluginStore, ToolContext
    from bot.plugins.declare import Permission, ToolDefinitionError, ToolSpec, tool
    from bot.plugins.loader import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
    from bot.plugins.loader import Plugin, PluginError
    from bot.plugins.loader import PluginManager as PluginManager
    from bot.plugins.registry import ToolRegistry as ToolRegistry
    from bot.prompt.safety import one_line_json
    from bot.scheduling.kinds import REMINDERS_KIND
    from bot.scheduling.scheduler import Scheduler
    from bot.values import Memory

# exported name -> the module that defines it; loaded on first use (PEP 562), so that
# ``from bot.plugins import tool`` costs pydantic and nothing heavier
_EXPORTS: dict[str, str] = {
    "ChatContext": "bot.context",
    "ChatType": "bot.context",
    "CommandResult": "bot.plugins.commands",
    "ENTRY_POINT_GROUP": "bot.plugins.loader",
    "Memory": "bot.values",
    "MemoryStore": "bot.memory.store",
    "Permission": "bot.plugins.declare",
    "Plugin": "bot.plugins.loader",
    "PluginError": "bot.plugins.loader",
    "PluginManager": "bot.plugins.loader",
    "PluginStore": "bot.plugins.context",
    "REMINDERS_KIND": "bot.scheduling.kinds",
    "Scheduler": "bot.scheduling.scheduler",
    "Scope": "bot.context",
    "ToolContext": "bot.plugins.context",
    "ToolDefinitionError": "bot.plugins.declare",
    "ToolRegistry": "bot.plugins.registry",
    "ToolSpec": "bot.plugins.declare",
    "UserFacingError": "bot.errors",
    "display_name": "bot.context",
    "one_line_json": "bot.prompt.safety",
    "tool": "bot.plugins.declare",
}

__all__ = [
    "REMINDERS_KIND",
    "ChatContext",
    "ChatType",
    "CommandResult",
    "Memory",
    "MemoryStore",
    "Permission",
    "Plugin",
    "PluginError",
    "PluginStore",
    "Scheduler",
    "Scope",
    "ToolContext",
    "ToolDefinitionError",
    "ToolSpec",
    "UserFacingError",
    "display_name",
    "one_line_json",
    "tool",
]


# every name of _EXPORTS loads (older code imports PluginManager from here); __all__ is the face
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, list(_EXPORTS))
