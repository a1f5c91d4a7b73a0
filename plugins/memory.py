"""The ``memory`` plugin: the model's ``remember`` / ``forget`` / ``recall`` tools and the
``/memory`` command, over the long-term memory store (``bot.memory.store``).

What is remembered stays in the conversation it was said in (``bot.memory.scope``): a private
chat's memories are recalled only there; in a group, in that conversation (the group, the topic,
or the person under ``/scope user``), and a person's own facts for that person in that group.
Users see and delete their own; a chat's admins see and delete all of that chat's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from bot.plugins import (
    ChatContext,
    CommandResult,
    Memory,
    Plugin,
    ToolContext,
    display_name,
    one_line_json,
    tool,
)

if TYPE_CHECKING:  # annotations only: importing this plugin loads no LLM SDK (check-config)
    from bot.plugins import MemoryStore

_LIST_LIMIT = 30


@tool(timeout=10)
async def remember(
    ctx: ToolContext,
    fact: Annotated[
        str,
        Field(min_length=1, max_length=1000, description="a durable fact, in a full sentence"),
    ],
    for_everyone: Annotated[
        bool, Field(description="a fact about the whole group rather than this user")
    ] = False,
) -> str:
    """Remember a durable fact about the user (or, in a group, about the group) for later."""
    if not fact.strip():
        return "Error: the fact is blank; nothing was remembered. Call remember with its text."
    memories = _store(ctx)
    memory = await memories.add(
        ctx.chat,
        fact,
        conversation_key=ctx.conversation_key,
        chat_wide=for_everyone,
        created_by="tool",
    )
    return f"Remembered (#{memory.memory_id}): {memory.text}"


@tool(timeout=10)
async def forget(
    ctx: ToolContext,
    memory_id: Annotated[int, Field(description="the memory's number, from recall")],
) -> str:
    """Forget one remembered fact by its number. Users may forget only their own."""
    owner = None if ctx.is_admin else ctx.chat.user_id
    if await _store(ctx).delete(memory_id, chat_key=ctx.chat.chat_key, user_id=owner):
        return f"Forgot memory #{memory_id}."
    return f"Error: no memory #{memory_id} that this user may delete here."


@tool(timeout=10)
async def recall(
    ctx: ToolContext,
    query: Annotated[str, Field(min_length=1, max_length=500, description="what to look for")],
) -> str:
    """Search what was remembered in this conversation (with each memory's number)."""
    memories = _store(ctx)
    found = await memories.search(
        memories.audience(ctx.chat, ctx.conversation_key), query, limit=10
    )
    if not found:
        return "Nothing remembered about that here."
    return "\n".join(_line(m) for m in found)


async def _memory_command(
    memories: MemoryStore, is_admin: bool, ctx: ChatContext, args: str
) -> CommandResult:
    words = args.split()
    if words[:1] == ["delete"] and len(words) == 2 and words[1].lstrip("#").isdigit():
        owner = None if is_admin else ctx.user_id
        number = int(words[1].lstrip("#"))
        if await memories.delete(number, chat_key=ctx.chat_key, user_id=owner):
            return CommandResult(f"Forgot memory #{number}.", private=True)
        return CommandResult(f"No memory #{number} you may delete here.", ok=False, private=True)
    if words:
        return CommandResult(
            "Usage: /memory (list) or /memory delete <number>", ok=False, private=True
        )
    listed = await memories.list(ctx.chat_key, None if is_admin else ctx.user_id, _LIST_LIMIT)
    if not listed:
        return CommandResult("I have no memories here yet.", private=True)
    whose = "this chat's" if is_admin and not ctx.is_private else "your"
    lines = [f"{len(listed)} of {whose} memories (newest first):", *map(_line, listed)]
    lines.append("Delete one with /memory delete <number>.")
    return CommandResult("\n".join(lines), private=True)


def _line(memory: Memory) -> str:
    """One memory per line: the text is user input, so its own line breaks are escaped."""
    who = display_name(memory.user_name) or memory.user_id
    return f"#{memory.memory_id} {one_line_json(memory.text)} ({who})"


def _store(ctx: ToolContext) -> MemoryStore:
    if ctx.memories is None:
        raise RuntimeError("long-term memory is off (memory.enabled: false)")
    return ctx.memories


def setup(plugin: Plugin) -> None:
    memories = plugin.memories
    if memories is None:
        raise RuntimeError("long-term memory is off (memory.enabled: false)")

    async def command(ctx: ChatContext, args: str) -> CommandResult:
        return await _memory_command(memories, plugin.is_admin(ctx), ctx, args)

    plugin.add_command(
        "memory",
        "List what I remember here, or /memory delete <number>",
        command,
        admin_aware=True,  # a chat's admins list and delete everyone's memories here
    )
    for func in (remember, forget, recall):
        plugin.add_tool(func)
