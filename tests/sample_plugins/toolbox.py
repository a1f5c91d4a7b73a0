"""A plugin with settings, an admin-only tool, a slow tool, failing tools and a command."""

from __future__ import annotations

import asyncio
from typing import Annotated

from pydantic import BaseModel, Field

from bot.context import ChatContext
from bot.errors import UserFacingError
from bot.plugins import CommandResult, Permission, Plugin, ToolContext, tool


class Settings(BaseModel):
    greeting: str = "Hello"


@tool
async def greet(ctx: ToolContext, name: Annotated[str, Field(description="who")]) -> str:
    """Greet someone by name."""
    assert isinstance(ctx.settings, Settings)
    await ctx.store.set("last", name)
    return f"{ctx.settings.greeting}, {name}!"


@tool(permission=Permission.ADMINS)
async def wipe_everything(ctx: ToolContext) -> str:
    """Dangerous: only admins may run this."""
    return "wiped"


@tool(timeout=0.2)
async def slow(ctx: ToolContext, seconds: float = 5.0) -> str:
    """Sleeps for a while."""
    await asyncio.sleep(seconds)
    return "finished"


@tool
async def explode(ctx: ToolContext) -> str:
    """Always fails."""
    raise RuntimeError("kaboom at 0x00 in relation memories")


@tool
async def refuse(ctx: ToolContext) -> str:
    """Always refuses, saying why."""
    raise UserFacingError("vault refused (log)", chat_text="The vault is closed on Sundays.")


async def last_greeted(ctx: ChatContext, args: str) -> CommandResult:
    return CommandResult("someone")


def setup(plugin: Plugin) -> None:
    for func in (greet, wipe_everything, slow, explode, refuse):
        plugin.add_tool(func)
    plugin.add_command("greeted", "Who was greeted last", last_greeted)
