"""What the service hands back: a turn's :class:`Reply` and the events on its way, and
``/history``'s :class:`HistoryInfo`.

A streamed turn yields :class:`~bot.llm.client.TextDelta` pieces of the answer,
:class:`ToolStarted` / :class:`ToolFinished` around each tool call, and ends with :class:`Done`
carrying the stored :class:`Reply`. Plain frozen values: adapters and commands read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.context import Scope
from bot.conversation.reply_cap import REPLY_LIMIT, as_shown
from bot.llm.client import TextDelta, ToolCall
from bot.values import Usage

__all__ = [
    "ChatEvent",
    "Done",
    "HistoryInfo",
    "Reply",
    "TextDelta",
    "ToolFinished",
    "ToolStarted",
]


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    turn_id: int
    conversation_key: str
    usage: Usage
    model: str
    finish_reason: str
    # the adapter's ``split`` of ``shown``, kept from fitting the reply: sent without rendering
    # it again (None when no ``split`` was given)
    rendered: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def shown(self) -> str:
        """The text as a chat shows it: ``text``, plus a note when the model stopped at its
        output limit (``truncated``)."""
        return as_shown(self.text, self.finish_reason)

    @property
    def truncated(self) -> bool:
        """The model stopped at the output limit; adapters may say so."""
        return self.finish_reason == "length"

    @property
    def capped(self) -> bool:
        """The bot cut the answer at its own reply limit; the text says so already."""
        return self.finish_reason == REPLY_LIMIT


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolFinished:
    call: ToolCall
    result: str


@dataclass(frozen=True, slots=True)
class Done:
    reply: Reply


ChatEvent = TextDelta | ToolStarted | ToolFinished | Done


@dataclass(frozen=True, slots=True)
class HistoryInfo:
    """What ``/history`` shows: the conversation, its window and what is stored."""

    conversation_key: str
    scope: Scope
    turns_in_context: int
    turns_stored: int
    unanswered: int
    window_tokens: int
    budget: int
    undelivered: int = 0  # answered, but the platform never took the reply
