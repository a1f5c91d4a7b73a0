"""The bot applications one fake Discord hosts, as real Discord hosts many: each with its
token, application id (= its bot user's id), user, privileged-intent toggles and application
commands.

The fake's API speaks "as the bot" (``fake.token``, ``fake.bot_user``, ``fake.sent``,
``fake.slash`` ...). Which bot that is comes from :data:`ACTING`: the REST pipeline sets it
to the application whose token authenticated the request (or whose interaction webhook it
is), the gateway to the session's application, and a test to a :class:`FakeBot`'s with
``with bot.acting():``. Unset, it is the first application, the one ``FakeDiscord(token,
app_id, bot_name)`` was built with, so a single-bot test never notices any of this.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from bot.testing.discord.payloads import user_json
from bot.testing.discord.wire import JSONDict


class HostingFake(Protocol):
    """What a :class:`FakeBot` asks of the fake that hosts it (``FakeDiscord``: named here
    by what it does, so this module imports none of the fake's)."""

    sessions: Mapping[str, Any]  # gateway sessions: .app, .ready, .connection

    @property
    def sent(self) -> list[JSONDict]: ...

    def member(
        self,
        guild: JSONDict,
        user: JSONDict,
        *,
        nick: str | None = None,
        roles: list[int] | None = None,
        permissions: int | None = None,
    ) -> JSONDict: ...

    def messages(self, channel_id: int) -> list[JSONDict]: ...

    def commands(self, guild_id: int | None = None) -> list[JSONDict]: ...

    async def wait_until(
        self,
        predicate: Callable[[], bool],
        timeout: float = 5.0,  # noqa: ASYNC109
        *,
        what: str = "condition",
    ) -> None: ...


__all__ = ["ACTING", "Applications", "BotApp", "FakeBot", "acting", "new_app"]


@dataclass(eq=False, slots=True)
class BotApp:
    """One application and its bot user (the fake's record; tests hold a :class:`FakeBot`)."""

    token: str
    application_id: int
    name: str
    user: JSONDict
    # True: every privileged intent is enabled in the developer portal; an int: only those bits.
    privileged_intents: bool | int = True
    commands: dict[int | None, list[JSONDict]] = field(default_factory=lambda: {None: []})
    identify: JSONDict | None = None  # this application's last IDENTIFY


ACTING: ContextVar[BotApp | None] = ContextVar("fake_discord_acting", default=None)


def new_app(token: str, app_id: int, name: str, privileged_intents: bool | int) -> BotApp:
    user = user_json(app_id, name.lower(), name, bot=True)
    user["verified"] = True
    user["mfa_enabled"] = False
    return BotApp(token, app_id, name, user, privileged_intents)


@contextlib.contextmanager
def acting(app: BotApp | None) -> Iterator[None]:
    """Run the block as ``app`` (None: leave whoever acts now)."""
    if app is None:
        yield
        return
    token = ACTING.set(app)
    try:
        yield
    finally:
        ACTING.reset(token)


class FakeBot:
    """A test's handle on one bot application of a :class:`FakeDiscord`
    (``fake.add_bot(...)``, ``fake.bots``): what the fake says "as the bot", for this one."""

    def __init__(self, fake: HostingFake, app: BotApp) -> None:
        self.fake = fake
        self.app = app

    def __repr__(self) -> str:
        return f"FakeBot({self.app.name!r}, id={self.app.application_id})"

    @property
    def token(self) -> str:
        return self.app.token

    @property
    def application_id(self) -> int:
        return self.app.application_id

    @property
    def user(self) -> JSONDict:
        """Its bot user (``bot: true``), e.g. for ``fake.message(..., author=...)``."""
        return self.app.user

    @property
    def identify(self) -> JSONDict | None:
        """Its last IDENTIFY payload (None until it connected)."""
        return self.app.identify

    @contextlib.contextmanager
    def acting(self) -> Iterator[FakeBot]:
        """Use the fake's API as this bot: ``with quiz.acting(): fake.slash(...)``."""
        with acting(self.app):
            yield self

    def join(self, guild: JSONDict, **member: Any) -> JSONDict:
        """Invite the bot to ``guild`` (``nick``, ``roles``, ``permissions`` as for
        ``fake.member``); a connected bot gets the guild's GUILD_CREATE, as on Discord."""
        return self.fake.member(guild, self.app.user, **member)

    def sent(self) -> list[JSONDict]:
        """Every message this bot created (as ``fake.sent`` for the first bot)."""
        with acting(self.app):
            return self.fake.sent

    def messages(self, channel_id: int) -> list[JSONDict]:
        """This bot's messages in a channel."""
        with acting(self.app):
            return self.fake.messages(channel_id)

    def commands(self, guild_id: int | None = None) -> list[JSONDict]:
        """This application's commands, global (None) or for a guild."""
        with acting(self.app):
            return self.fake.commands(guild_id)

    def connected(self) -> bool:
        """Whether one of its gateway sessions is identified, READY and connected."""
        return any(
            s.app is self.app and s.ready and s.connection is not None
            for s in self.fake.sessions.values()
        )

    async def wait_ready(self, timeout: float = 5.0) -> None:  # noqa: ASYNC109
        """Wait until this bot has a READY session."""
        await self.fake.wait_until(self.connected, timeout, what=f"{self.app.name} to connect")


class Applications:
    """The fake's bot applications and who acts now (a base of ``FakeDiscord``)."""

    _apps: dict[int, BotApp]
    users: dict[int, JSONDict]

    def add_bot(
        self, token: str, app_id: int, name: str, *, privileged_intents: bool | int = True
    ) -> FakeBot:
        """One more bot application on this Discord (its own token, gateway sessions, guild
        memberships, permissions and commands); invite it to a guild with ``join``. Its
        messages reach every other bot that can see the channel, with ``author.bot`` true."""
        if app_id in self._apps or app_id in self.users:
            raise ValueError(f"id {app_id} is taken")
        if any(app.token == token for app in self._apps.values()):
            raise ValueError("that token belongs to another application")
        app = self._apps[app_id] = new_app(token, app_id, name, privileged_intents)
        self.users[app_id] = app.user
        return FakeBot(cast(HostingFake, self), app)  # a FakeDiscord's base

    @property
    def bots(self) -> list[FakeBot]:
        """Every bot application, the first (``FakeDiscord(token, ...)``'s) first."""
        return [FakeBot(cast(HostingFake, self), app) for app in self._apps.values()]

    @property
    def _app(self) -> BotApp:
        """The application acting now (:mod:`bot.testing.discord.apps`)."""
        return ACTING.get() or next(iter(self._apps.values()))

    def _app_by_token(self, token: str) -> BotApp | None:
        return next((a for a in self._apps.values() if a.token == token), None)

    @property
    def token(self) -> str:
        return self._app.token

    @token.setter
    def token(self, value: str) -> None:
        self._app.token = value

    @property
    def application_id(self) -> int:
        """The acting bot's application id, which is also its user id."""
        return self._app.application_id

    @property
    def bot_name(self) -> str:
        return self._app.name

    @property
    def bot_user(self) -> JSONDict:
        return self._app.user

    @property
    def privileged_intents(self) -> bool | int:
        """The acting bot's privileged intents in the developer portal: True all, False
        none, an int only those bits."""
        return self._app.privileged_intents

    @privileged_intents.setter
    def privileged_intents(self, value: bool | int) -> None:
        self._app.privileged_intents = value

    @property
    def _commands(self) -> dict[int | None, list[JSONDict]]:
        return self._app.commands
