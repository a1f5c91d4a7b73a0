"""Who is an admin: the one policy commands, tools, plugins and access exemptions ask.

Two ranks, both decided in code, never by the prompt:

* a **bot admin** is listed in config ``admins:`` as ``"platform:user_id"``, or is vouched for
  by its adapter (``ChatContext.is_owner``): whoever runs the bot at the console, or an HTTP
  token listed in ``http.bot_admin_tokens``. A platform whose user ids the client names itself
  (:data:`bot.config.CLIENT_NAMED_PLATFORMS`) never matches an ``admins:`` entry. Bot admins
  are never refused by the access lists or limited, and see the whole bot's usage.
* a **chat admin** is a bot admin, or has the platform's own admin flag, which the adapter puts
  on the ``ChatContext``: Telegram's chat creator and administrators (``getChatMember``),
  Discord's Manage Messages or Administrator in the channel.

Telegram's flag costs a request, so its adapter only looks it up when the answer can matter:
for commands that declare it (``CommandInfo.admin_only`` or ``admin_aware``, see
:attr:`bot.plugins.commands.CommandInfo.needs_admin_status`) and for turns that may be offered
admin-only tools.
"""

from __future__ import annotations

from bot.config import Settings
from bot.context import ChatContext


class AdminPolicy:
    """Answers "is this caller an admin here?" from the context and the config."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def is_bot_admin(self, ctx: ChatContext) -> bool:
        """Config ``admins:`` or the console's owner: exempt everywhere, sees everything."""
        return ctx.is_owner or self.settings.is_bot_admin(ctx.platform, ctx.user_id)

    def is_admin(self, ctx: ChatContext) -> bool:
        """An admin of this chat: the platform says so, or a bot admin."""
        return ctx.is_admin or self.is_bot_admin(ctx)
