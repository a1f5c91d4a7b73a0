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

from bot.plugins.context import PluginStore, ToolContext
from bot.plugins.declare import Permission, ToolDefinitionError, ToolSpec, tool
from bot.plugins.loader import ENTRY_POINT_GROUP, Plugin, PluginError, PluginManager
from bot.plugins.registry import ToolRegistry

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
