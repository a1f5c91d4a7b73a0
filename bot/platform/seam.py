"""The one object an adapter is given: :class:`Platform`, what a chat platform needs from the
bot and nothing more (the whole app stays out of reach).

It holds the conversation's entry points (:class:`Conversation`), the chat commands
(:class:`ChatCommands`), the outbound registry (:class:`~bot.platform.delivery.Outbound`), the
store (delivery records, the webhook inbox, leases), the settings the adapter reads its own
section from, and the operator's view (:class:`~bot.platform.operator.Operator`) that an
admin surface such as the HTTP adapter uses. Each member is a Protocol the real object meets
structurally, so this layer imports nothing above it. ``App.platform`` builds it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.config import Settings
from bot.context import ChatContext
from bot.platform.commands import CommandInfo, CommandResult
from bot.platform.delivery import Outbound
from bot.platform.held_messages import MoreMessages
from bot.platform.media import Attachments
from bot.platform.operator import Operator
from bot.storage import Storage
from bot.values import Usage

__all__ = [
    "Answered",
    "ChatCommands",
    "ChatMoved",
    "Conversation",
    "HelpNote",
    "KnowledgeUploads",
    "Platform",
    "SplitReply",
]

SplitReply = Callable[[str], Awaitable[Sequence[str]]]  # a reply as shown -> its messages
ChatMoved = Callable[[str, str], Awaitable[None]]  # (old chat key, new chat key)
HelpNote = Callable[[ChatContext, bool], str | None]  # (ctx, is admin) -> a line for /help


class Answered(Protocol):
    """A stored answer (the conversation's ``Reply``): what an adapter shows of it."""

    @property
    def text(self) -> str: ...
    @property
    def turn_id(self) -> int: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def truncated(self) -> bool: ...  # stopped at the model's output limit
    @property
    def capped(self) -> bool: ...  # cut at the bot's own reply limit
    @property
    def shown(self) -> str: ...  # the text a chat shows (a truncated one says so)
    @property
    def rendered(self) -> Sequence[str] | None: ...  # ``split``'s messages of ``shown``: send these


class Conversation(Protocol):
    """The conversation's entry points (``ChatService``): a message in, an answer out."""

    async def chat(
        self,
        ctx: ChatContext,
        text: str,
        *,
        attachments: Attachments = (),
        split: SplitReply | None = None,
        on_admitted: Callable[[], object] | None = None,
        burst: bool = True,
        more: MoreMessages | None = None,
    ) -> Answered:
        """Answer one message (rate, access and budget refusals raise UserFacingError).

        ``split``: the messages the adapter would send for a text; the answer is kept within
        ``limits.max_reply_messages`` of them, and the last ones come back as ``rendered``.
        ``burst``: the sender's quick messages may be answered as one turn
        (``chat.burst_window``): the later ones raise ``MessageFolded``, a quiet refusal;
        False where each message needs its own answer or cannot arrive meanwhile. ``more``:
        the sender's later messages the adapter holds back, offered while a burst gathers
        (``bot.conversation.bursts.Later``)."""
        ...

    def stream(
        self,
        ctx: ChatContext,
        text: str,
        *,
        attachments: Attachments = (),
        split: SplitReply | None = None,
        on_admitted: Callable[[], object] | None = None,
        burst: bool = True,
        more: MoreMessages | None = None,
    ) -> AsyncGenerator[object, None]:
        """The same turn as events (``bot.conversation.events``), ending with ``Done``."""
        ...

    async def ambient(self, ctx: ChatContext, text: str, *, names: Sequence[str] = ()) -> bool:
        """Whether to answer a group message not addressed to the bot as if it were (ambient
        mode, where a chat has it on; ``names``: the bot's names on this platform, which
        people say instead of an @). False: overhear it as usual. Awaits a model call when
        ``ambient.classifier_model`` is set: hold the chat's later messages meanwhile."""
        ...

    async def overhear(self, ctx: ChatContext, text: str, *, follow_up: bool = True) -> bool:
        """Keep a group message not addressed to the bot as context; ``follow_up=False``: it
        @mentions someone else, so it never joins its sender's burst."""
        ...

    async def edited(self, ctx: ChatContext, text: str, *, context: bool = True) -> str:
        """A message was edited: an ``EditOutcome`` says what became of it."""
        ...

    async def migrate_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """The platform moved a chat to a new id (a Telegram group became a supergroup): its
        history and settings. An adapter calls :meth:`Platform.migrate_chat`, which moves
        scheduled posts and reminders too."""
        ...


class ChatCommands(Protocol):
    """The chat commands (``bot.conversation.commands.Commands``)."""

    @property
    def infos(self) -> Sequence[CommandInfo]:
        """Every command, for the platform's command menu."""
        ...

    def knows(self, name: str) -> bool:
        """Whether /name has a handler (else the adapter answers it, as Telegram's /ask)."""
        ...

    def register(self, info: CommandInfo) -> None:
        """Add a command the adapter answers itself to /help and the menus."""
        ...

    def needs_admin_status(self, name: str) -> bool:
        """Whether the adapter must look up the caller's admin rights for /name."""
        ...

    async def handle(self, ctx: ChatContext, name: str, args: str = "") -> CommandResult: ...

    def add_help_note(self, note: HelpNote) -> None:
        """What /help should also say on this platform."""
        ...


class KnowledgeUploads(Protocol):
    """A document an admin sends to a chat with ``/knowledge add BASE`` as its caption
    (``bot.conversation.knowledge_command.KnowledgeDesk``)."""

    async def upload(
        self,
        ctx: ChatContext,
        base: str,
        filename: str,
        size: int | None,
        fetch: Callable[[], Awaitable[bytes]],
    ) -> CommandResult:
        """Checked (who, which base, the size) before ``fetch`` downloads the file; the
        result is the reply to post."""
        ...


@dataclass(frozen=True, slots=True)
class Platform:
    """What an adapter is created with (``create_adapter(platform)``)."""

    settings: Settings  # the adapter validates its own section: bot.config.platform_settings
    conversation: Conversation
    commands: ChatCommands
    outbound: Outbound  # register to take messages the bot starts (reminders)
    store: Storage  # delivery records, the webhook inbox, poller leases
    has_admin_tools: Callable[[], bool]  # look up a sender's admin rights before a turn?
    operator: Operator  # the operator's view of the whole bot (an admin API, a dashboard)
    knowledge: KnowledgeUploads | None = None  # documents sent to a chat (None: no bases)
    # what else follows a chat to its new id: scheduled posts, plugins' records (reminders)
    chat_moved: ChatMoved | None = None

    async def migrate_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """The platform moved a chat to a new id (a Telegram group became a supergroup): its
        history and settings (``conversation.migrate_chat``), then what the bot keeps by chat
        key elsewhere (``chat_moved``: scheduled posts, reminders). Returns the turns moved;
        a second call for the same move moves nothing."""
        moved = await self.conversation.migrate_chat(old_chat_key, new_chat_key)
        if self.chat_moved is not None:
            await self.chat_moved(old_chat_key, new_chat_key)
        return moved
