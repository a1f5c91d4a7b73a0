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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from bot.plugins.context import PluginStore, ToolContext
    from bot.plugins.declare import Permission, ToolDefinitionError, ToolSpec, tool
    from bot.plugins.loader import ENTRY_POINT_GROUP, Plugin, PluginError, PluginManager
    from bot.plugins.registry import ToolRegistry

# exported name -> the module that defines it; loaded on first use (PEP 562), so that
# ``from bot.plugins import tool`` costs pydantic and nothing heavier
_EXPORTS: dict[str, str] = {
    "ENTRY_POINT_GROUP": "bot.plugins.loader",
    "Permission": "bot.plugins.declare",
    "Plugin": "bot.plugins.loader",
    "PluginError": "bot.plugins.loader",
    "PluginManager": "bot.plugins.loader",
    "PluginStore": "bot.plugins.context",
    "ToolContext": "bot.plugins.context",
    "ToolDefinitionError": "bot.plugins.declare",
    "ToolRegistry": "bot.plugins.registry",
    "ToolSpec": "bot.plugins.declare",
    "tool": "bot.plugins.declare",
}

__all__ = [
    "ENTRY_POINT_GROUP",
    "Permission",
    "Plugin",
    "PluginError",
    "PluginManager",
    "PluginStore",
    "ToolContext",
    "ToolDefinitionError",
    "ToolRegistry",
    "ToolSpec",
    "tool",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
