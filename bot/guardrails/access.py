"""Who may talk to the bot: allow and deny lists of chats and users, and a private-bot mode.

Each message is described by a few subjects, matched with shell-style patterns (``*``):
``telegram:-1001234`` (a chat), ``telegram:user:42`` (a user), ``telegram:private`` /
``discord:group`` (every private chat / group of a platform), ``*:private`` (every private chat
anywhere), and where the adapter knows them ``discord:guild:123`` (a whole server) and a
thread's parent channel (``discord:456`` covers its threads). A further bot of the deployment
(``telegram.helper``, see ``telegram.bots``) is matched by its own subjects and by its
platform's (``telegram:user:42`` covers it too). A deny match always refuses;
with an allow list, only matches get through; in private-bot mode the allow list is required
(an empty one admits nobody). Bot admins from config (and the console's owner) are always let
in, so they can never lock themselves out.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from bot.config import AccessSettings, Settings
from bot.context import ChatContext, platform_family
from bot.errors import UserFacingError
from bot.guardrails.admins import AdminPolicy


class AccessDeniedError(UserFacingError):
    """This chat or user may not use the bot; ``chat_text`` is the polite refusal."""


def subjects(ctx: ChatContext) -> tuple[str, ...]:
    kind = "private" if ctx.is_private else "group"
    extra = dict(ctx.extra)
    around = (  # what an adapter knows the chat sits in: a server, a thread's channel
        *((f"{ctx.platform}:guild:{extra['guild']}",) if "guild" in extra else ()),
        *((f"{ctx.platform}:{extra['parent']}",) if "parent" in extra else ()),
    )
    own = (
        f"{ctx.platform}:{ctx.chat_id}",
        f"{ctx.platform}:user:{ctx.user_id}",
        f"{ctx.platform}:{kind}",
        *around,
    )
    family = platform_family(ctx.platform)
    if family == ctx.platform:
        return own
    # one more bot of the deployment (telegram.helper): what is written for its platform
    # (telegram:...) covers it too, after its own subjects (a preset for it alone comes first)
    return (*own, *(family + subject[len(ctx.platform) :] for subject in own))


class AccessPolicy:
    def __init__(self, settings: Settings, admins: AdminPolicy | None = None) -> None:
        self.settings = settings
        self.access: AccessSettings = settings.access
        self.admins = admins or AdminPolicy(settings)

    def exempt(self, ctx: ChatContext) -> bool:
        """Bot admins (config ``admins:``, the console's owner): never refused or limited."""
        return self.admins.is_bot_admin(ctx)

    def allows(self, ctx: ChatContext) -> bool:
        if self.exempt(ctx):
            return True
        names = subjects(ctx)
        if _any(self.access.deny, names):
            return False
        if self.access.allow or self.access.private_bot:
            return _any(self.access.allow, names)
        return True

    def check(self, ctx: ChatContext) -> None:
        if not self.allows(ctx):
            raise AccessDeniedError(
                f"access denied chat={ctx.chat_key} user={ctx.user_id}",
                chat_text=self.access.refusal,
            )


def _any(patterns: tuple[str, ...], names: tuple[str, ...]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns for name in names)
