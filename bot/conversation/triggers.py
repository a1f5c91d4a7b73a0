"""What an adapter decides about each incoming message, in platform-neutral terms.

Each adapter has its own rules (Telegram: mention, reply, ``/ask``, keywords; Discord: mention,
reply, slash commands) but they all end in one of these actions, and quote a replied-to message
the same way, so the model sees the same shape of input from every platform.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

QUOTE_LIMIT = 500


class Action(StrEnum):
    ANSWER = "answer"  # send ``text`` to the model
    COMMAND = "command"  # run ``command`` with ``text`` as its arguments
    OVERHEAR = "overhear"  # keep ``text`` as context for later
    IGNORE = "ignore"


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    text: str = ""
    command: str | None = None
    # a group message with text that is not addressed to the bot: ambient mode may answer it
    # (``ChatService.ambient``), else ``action`` stands (overheard or ignored)
    unaddressed: bool = False


IGNORE = Decision(Action.IGNORE)


def with_quote(text: str, quoted: str | None, author: str) -> str:
    """Carry the message being replied to, so "@bot is this right?" has its subject."""
    if quoted is None:
        return text
    if len(quoted) > QUOTE_LIMIT:
        quoted = quoted[:QUOTE_LIMIT] + "…"
    quote = f'[replying to {author}: "{quoted}"]'
    return f"{quote}\n{text}" if text else quote
