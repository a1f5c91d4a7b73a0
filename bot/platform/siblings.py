"""What one of a deployment's bots tells the others of its platform (``telegram.bots``,
``discord.bots``): its group answers, kept as overheard context in each sibling's conversation
of that chat, said by the answering bot.

Written through the shared database rather than left to the platform: Telegram never delivers
one bot's messages to another, and where Discord does, the adapters ignore every bot's messages
(no loops, third-party bots included); the database reaches a sibling whichever replica runs it,
and carries the final answer rather than a streamed preview's first words. Nothing told is
ever answered: it arrives as context, never as a message. :class:`SiblingAdapters` runs a
platform's bots together as one adapter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from bot.context import ChatContext
from bot.errors import ConfigError
from bot.platform.adapter import Adapter
from bot.platform.seam import Conversation

__all__ = ["Account", "SiblingAdapters", "Siblings", "accounts"]

A = TypeVar("A", bound=Adapter)
C = TypeVar("C")

log = logging.getLogger(__name__)


class FurtherBot(Protocol):
    """An entry of ``telegram.bots`` / ``discord.bots``."""

    @property
    def platform(self) -> str: ...


B = TypeVar("B", bound=FurtherBot)


@dataclass(frozen=True, slots=True)
class Account(Generic[C]):
    """One bot account to run: its platform name, its settings, the others' names."""

    name: str
    settings: C
    siblings: tuple[str, ...]


def accounts(
    family: str, config: C, bots: Sequence[B], for_bot: Callable[[B], C]
) -> list[Account[C]]:
    """The main bot's account (``family``: ``telegram``), then each further bot's, each
    knowing the others it tells its answers to."""
    names = (family, *(bot.platform for bot in bots))
    settings = (config, *map(for_bot, bots))
    return [
        Account(name, own, tuple(n for n in names if n != name))
        for name, own in zip(names, settings, strict=True)
    ]


class Siblings:
    """The other bots of the deployment that one bot's group answers are told to (their
    platform names: ``telegram.quiz``, ``discord``, ...)."""

    def __init__(self, conversation: Conversation, names: tuple[str, ...]) -> None:
        self.conversation = conversation
        self.names = names

    async def tell(self, ctx: ChatContext, speaker_id: str, speaker: str, text: str) -> None:
        """The bot ``speaker`` (user id ``speaker_id``) answered ``text`` in ``ctx``'s group:
        each sibling keeps it as context there (never in private chats; best effort: a
        failure is logged)."""
        if ctx.is_private or not text.strip():
            return
        for name in self.names:
            heard = ChatContext(
                platform=name,
                chat_id=ctx.chat_id,
                chat_type=ctx.chat_type,
                user_id=speaker_id,
                user_name=speaker,
                thread_id=ctx.thread_id,
                chat_title=ctx.chat_title,
                extra=ctx.extra,
            )
            try:
                await self.conversation.overhear(heard, text)
            except Exception:
                log.warning("%s: %s not told of an answer chat=%s", ctx.platform, name, ctx.chat_id)


class SiblingAdapters(Generic[A]):
    """Several bot accounts of one platform run as one adapter: started and stopped together;
    one that stops with an error stops the others (as a single bot's would)."""

    def __init__(self, name: str, adapters: Sequence[A]) -> None:
        self.name = name
        self.adapters = list(adapters)

    async def run(self) -> None:
        """A bot's refusal (a rejected token) comes out as itself, a ``ConfigError`` the entry
        point logs as one sentence, rather than wrapped in the task group's."""
        try:
            async with asyncio.TaskGroup() as group:
                for adapter in self.adapters:
                    group.create_task(adapter.run())
        except ExceptionGroup as failed:
            errors = failed.exceptions
            if len(errors) == 1:
                raise errors[0] from None
            if all(isinstance(e, ConfigError) for e in errors):
                raise ConfigError("; ".join(str(e) for e in errors)) from None
            raise

    async def stop(self) -> None:
        await asyncio.gather(*(adapter.stop() for adapter in self.adapters))
