"""The command menus Telegram shows when a user types "/": one per audience.

Private chats get the personal commands, groups the shared ones, and group administrators also
the admin-only ones (``/clear``, ``/scope``, ``/persona``). The menu is a hint: who may run a
command is still checked in code when it arrives.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from aiogram import Bot
from aiogram.exceptions import AiogramError
from aiogram.types import (
    BotCommand,
    BotCommandScopeAllChatAdministrators,
    BotCommandScopeAllGroupChats,
    BotCommandScopeAllPrivateChats,
    BotCommandScopeUnion,
)

from bot.plugins.commands import CommandInfo

log = logging.getLogger(__name__)

ASK = CommandInfo("ask", "Ask me something (in groups)")
# in private every message is a question (and the conversation is the user's)
_PRIVATE_ONLY_HIDDEN = frozenset({"ask", "scope", "ambient", "catchup"})


def menus(infos: Sequence[CommandInfo]) -> list[tuple[BotCommandScopeUnion, list[BotCommand]]]:
    everyone = [i for i in infos if not i.admin_only]
    private = [_command(i) for i in infos if i.name not in _PRIVATE_ONLY_HIDDEN]
    return [
        (BotCommandScopeAllPrivateChats(), private),
        (BotCommandScopeAllGroupChats(), [_command(i) for i in everyone]),
        (BotCommandScopeAllChatAdministrators(), [_command(i) for i in infos]),
    ]


async def register_menus(bot: Bot, infos: Sequence[CommandInfo]) -> None:
    for scope, commands in menus(infos):
        try:
            await bot.set_my_commands(commands=commands, scope=scope)
        except AiogramError as exc:  # a menu is a convenience: never fatal
            log.warning("setMyCommands failed scope=%s: %s", scope.type, exc)


def _command(info: CommandInfo) -> BotCommand:
    return BotCommand(command=info.name, description=info.description[:256])
