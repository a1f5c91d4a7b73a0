"""Registers a tool, then fails: the tool must be taken back."""

from __future__ import annotations

from bot.plugins import Plugin, ToolContext, tool


@tool
async def half_done(ctx: ToolContext) -> str:
    """Never available: setup fails after adding it."""
    return "nope"


def setup(plugin: Plugin) -> None:
    plugin.add_tool(half_done)
    plugin.add_command("halfdone", "Never available", _never)
    raise RuntimeError("the weather API key is missing")


async def _never(*args: object) -> None:
    raise AssertionError
