"""The platform-neutral event the core works on, and whose conversation it belongs to.

Adapters turn a Telegram update, a Discord event or a console line into a ``ChatContext``; the
core never sees a platform object. ``conversation_key`` answers "whose conversation is this?":
it always contains the platform and chat id, so one chat's history can never reach another.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from enum import StrEnum

from bot.text import clean_text

MAX_NAME_CHARS = 64
# Bidirectional overrides and isolates can make a name display as another one.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def display_name(name: str) -> str:
    """A person's name as the bot uses it anywhere (prompts, attributions, logs): one line,
    no control characters, at most :data:`MAX_NAME_CHARS` characters. A name is user input;
    a newline in it must not open a line of its own in a prompt."""
    kept = []
    for char in name:
        category = unicodedata.category(char)
        if category in ("Cc", "Zl", "Zp", "Cs") or char in _BIDI_CONTROLS:
            kept.append(" ")
        else:
            kept.append(char)
    clean = " ".join("".join(kept).split())
    if len(clean) > MAX_NAME_CHARS:
        clean = clean[: MAX_NAME_CHARS - 1].rstrip() + "…"
    return clean


def platform_family(platform: str) -> str:
    """The platform a bot account runs on: ``telegram.helper`` is one more Telegram bot of the
    same deployment (``telegram.bots``), of family ``telegram``. Its chats have keys of their
    own (``telegram.helper:-100``: its own history, presets, usage); access lists and bot
    admins written for the family cover it too."""
    return platform.partition(".")[0]


class ChatType(StrEnum):
    PRIVATE = "private"
    GROUP = "group"
    CHANNEL = "channel"


class Scope(StrEnum):
    """How a group chat's history is shared."""

    CHAT = "chat"  # everyone in the chat shares one history; user turns keep the speaker's name
    USER = "user"  # one history per user inside the chat
    THREAD = "thread"  # each topic/thread its own history (falls back to the chat without one)


@dataclass(frozen=True, slots=True)
class ChatContext:
    """One incoming message's who/where, filled by an adapter."""

    platform: str
    chat_id: str
    chat_type: ChatType
    user_id: str
    user_name: str = ""
    thread_id: str | None = None
    message_id: str | None = None
    is_admin: bool = False
    # the operator vouches for this caller, in code: whoever runs the bot at the console, or
    # an HTTP token listed in http.bot_admin_tokens. A bot admin: no access list or rate limit
    is_owner: bool = False
    reply_to_message_id: str | None = None
    extra: tuple[tuple[str, str], ...] = field(default=())
    chat_title: str = ""  # the group's title, "Guild #channel", a private chat: the person

    def __post_init__(self) -> None:
        if not self.platform or ":" in self.platform:
            raise ValueError(f"ChatContext.platform must have no ':', got {self.platform!r}")
        if not self.chat_id or not self.user_id:
            raise ValueError("ChatContext needs a chat_id and a user_id")
        if self.user_name:  # every adapter's names, normalised once here: one line, capped,
            # never a lone surrogate (bot.text)
            object.__setattr__(self, "user_name", display_name(clean_text(self.user_name)))
        if self.chat_title:  # shown in the admin dashboard: user input, one line, capped
            object.__setattr__(self, "chat_title", display_name(clean_text(self.chat_title)))

    @property
    def is_private(self) -> bool:
        return self.chat_type is ChatType.PRIVATE

    @property
    def chat_key(self) -> str:
        """Identifies the chat across all scopes (what ``/clear`` wipes)."""
        return f"{self.platform}:{self.chat_id}"

    def conversation_key(self, scope: Scope) -> str:
        """The history this message belongs to under ``scope``.

        Private chats are always per user, whatever the scope says.
        """
        if self.is_private or scope is Scope.USER:
            return f"{self.chat_key}:u:{self.user_id}"
        if scope is Scope.THREAD and self.thread_id is not None:
            return f"{self.chat_key}:t:{self.thread_id}"
        return self.chat_key
