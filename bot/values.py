"""The plain values the storage protocols take and return and every area passes around
(frozen dataclasses, no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from bot.context import Scope

__all__ = [
    "BOT_USER",
    "NO_USAGE",
    "AuditAction",
    "AuditEntry",
    "BurstMessage",
    "ChatPreferences",
    "ClearResult",
    "DailyUsage",
    "Delivery",
    "HistoryStats",
    "Memory",
    "MemoryScope",
    "NewTurn",
    "Overheard",
    "PromptRows",
    "Recalled",
    "StoredTurn",
    "Summary",
    "TurnStatus",
    "Usage",
    "UserDeletion",
    "WindowMark",
]


class TurnStatus(StrEnum):
    PENDING = "pending"  # the user's message is stored, the answer is being produced
    ANSWERED = "answered"
    UNANSWERED = "unanswered"  # the model failed or the process died; the user message is kept
    UNDELIVERED = "undelivered"  # answered, but the platform never took the reply
    CONTEXT = "context"  # an overheard group message, kept so later answers know the chatter


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one or more model calls. ``cached_tokens``: the part of ``prompt_tokens`` a
    provider's prompt cache served (billed at a discount); clamped to ``[0, prompt_tokens]``."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.cached_tokens <= self.prompt_tokens:
            clamped = max(0, min(self.cached_tokens, self.prompt_tokens))
            object.__setattr__(self, "cached_tokens", clamped)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


NO_USAGE = Usage()
BOT_USER = ""  # the usage ledger's user for the bot's own calls (summaries)


@dataclass(frozen=True, slots=True)
class DailyUsage:
    """One user's spending in one chat on one UTC day."""

    day: str
    chat_key: str
    user_id: str
    user_name: str
    turns: int
    usage: Usage


@dataclass(frozen=True, slots=True)
class BurstMessage:
    """A message of a burst answered with a later one of the same person
    (``chat.burst_window``): stored as itself, a context row just before the turn."""

    text: str
    platform_message_id: str | None
    created_at: float


@dataclass(frozen=True, slots=True)
class NewTurn:
    """The user's side of a turn, as it arrived."""

    conversation_key: str
    chat_key: str
    user_id: str
    user_name: str
    text: str
    platform_message_id: str | None = None
    overheard: tuple[int, ...] = ()  # ids of overheard messages that become context rows first
    burst: tuple[BurstMessage, ...] = ()  # the sender's earlier messages this turn answers too


@dataclass(frozen=True, slots=True)
class Overheard:
    """A group message the bot saw without being addressed, waiting to give context."""

    overheard_id: int
    user_id: str
    user_name: str
    text: str
    created_at: float


@dataclass(frozen=True, slots=True, weakref_slot=True)  # weakly: bot.prompt.assembly.TurnTokens
class StoredTurn:
    """One turn as loaded for the context window: its messages in OpenAI format."""

    turn_id: int
    user_id: str
    user_name: str
    status: TurnStatus
    messages: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class HistoryStats:
    turns_in_context: int  # turns after the last /reset
    turns_stored: int  # every turn of the conversation still in the database
    unanswered: int
    prompt_tokens: int
    completion_tokens: int
    undelivered: int = 0  # answered, but the reply never reached the chat


@dataclass(frozen=True, slots=True)
class ClearResult:
    turns: int
    messages: int


@dataclass(frozen=True, slots=True)
class ChatPreferences:
    """Per-chat overrides set by admins."""

    scope: Scope | None = None
    system_prompt: str | None = None
    ambient: bool | None = None  # /ambient on|off (None: the chats: preset decides)


class MemoryScope(StrEnum):
    PRIVATE = "private"  # said in a private chat: recalled there only (unless shared by config)
    MEMBER = "member"  # about one member, said in a group: that member's, in that group
    CHAT = "chat"  # about the group (or topic) itself: recalled in its conversation


@dataclass(frozen=True, slots=True)
class Memory:
    memory_id: int
    chat_key: str
    conversation_key: str  # the conversation it was said in (bot.memory.scope)
    user_id: str
    user_name: str
    scope: MemoryScope
    text: str
    created_at: float
    # search relevance, higher is better: -bm25, or the fused RRF score with embeddings; 0
    # outside a search
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class WindowMark:
    """Where a conversation's prompt begins (:mod:`bot.storage.prompt_windows`)."""

    start_turn_id: int  # the oldest turn the prompt holds (earlier ones left it)
    summary: str = ""  # the summary the prompt shows, pinned when the window was last cut


@dataclass(frozen=True, slots=True)
class PromptRows:
    """What a turn's prompt is read from (:meth:`PromptWindows.load_prompt_rows`)."""

    window: list[StoredTurn]  # as ``load_window`` returns it, oldest first
    overheard: list[Overheard]  # as ``load_overheard``, oldest first
    mark: WindowMark | None  # as ``load_window_mark``


@dataclass(frozen=True, slots=True)
class Summary:
    """The rolling summary of a conversation's turns that left the context window."""

    text: str
    through_turn_id: int  # the newest turn it covers
    turns_since: int  # turns completed since it was written (or the count restarted)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One reply being delivered: where, in answer to what, and what its preview shows."""

    delivery_id: int
    owner: str
    platform: str
    chat_key: str
    chat_id: str
    thread_id: str | None
    reply_to: str | None  # the user's message, for a notice when no preview was shown
    message_id: str | None  # the preview message currently being edited, if any
    shown: str  # what that message shows (plain text)
    turn_id: int | None  # set once the answer is stored
    created_at: float


class AuditAction(StrEnum):
    """What an audit entry records (bot.storage.audit)."""

    CLEAR = "clear"  # /clear: every conversation of the chat deleted
    RESET = "reset"  # /reset: one conversation's context starts afresh
    PERSONA = "persona"  # the chat's system prompt set or reset
    SCOPE = "scope"  # the chat's conversation scope changed
    FORGET = "forget"  # an operator deleted one memory of the chat (its id, never its text)
    AMBIENT = "ambient"  # ambient mode turned on or off in the chat (/ambient)
    SCHEDULE = "schedule"  # a scheduled post set or cancelled (/schedule, the admin API)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One change to a chat: who (``actor_id``, ``actor_name``), when (``at``, epoch
    seconds), what (``action`` and a one-line ``detail``); ``conversation_key`` for a reset."""

    at: float
    chat_key: str
    action: AuditAction
    actor_id: str
    actor_name: str
    detail: str = ""
    conversation_key: str = ""


@dataclass(frozen=True, slots=True)
class UserDeletion:
    """What :meth:`bot.storage.erasure.Erasure.delete_user` removed (or, for the ledger and
    the audit, anonymised), per kind."""

    turns: int = 0  # the person's turns: their message with the answer to it
    messages: int = 0  # those turns' messages: theirs plus each stored answer message
    overheard: int = 0  # group messages of theirs still waiting as chatter
    conversations: int = 0  # conversations that lost turns (their own ones included)
    memories: int = 0
    summaries: int = 0  # summaries and window marks dropped (rebuilt from what is left)
    deliveries: int = 0  # delivery records of the deleted answers
    inbox: int = 0  # platform updates of theirs, their payload blanked
    usage_rows: int = 0  # ledger rows kept (tokens were spent) with the name blanked
    audit_rows: int = 0  # audit entries kept (what an admin did) with the name blanked

    def counts(self) -> dict[str, int]:
        """Every kind with its count, in a fixed order (for printing)."""
        return {field.name: getattr(self, field.name) for field in fields(self)}


@dataclass(frozen=True, slots=True)
class ChatEntry:
    """What an adapter knows of a chat (noted when a turn begins)."""

    platform: str
    chat_id: str
    chat_type: str  # bot.context.ChatType value: private, group, channel...
    title: str  # Telegram's chat title, "Guild #channel" on Discord; a private chat: the person


@dataclass(frozen=True, slots=True)
class ChatSummary:
    chat_key: str  # "telegram:-1001234"
    platform: str
    chat_id: str
    chat_type: str  # "" when never noted
    title: str  # "" when never noted
    turns: int  # turns stored (every status but context): 0 once cleared or aged out
    last_activity: float  # unix time of the newest stored turn or audit entry (0: neither)


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One tool call of a turn, as the stored answer holds it."""

    name: str
    arguments: str  # as the model wrote them (JSON text, unchecked)
    result: str  # what the tool answered ("" when no answer was stored)


@dataclass(frozen=True, slots=True)
class HistoryItem:
    """One stored turn as a history page shows it: who said what, the tools the bot called on
    the way (in order) and the answer."""

    turn_id: int
    conversation_key: str
    user_id: str
    user_name: str
    text: str  # what the person wrote
    answer: str  # the final assistant text ("" while pending or when unanswered)
    status: TurnStatus
    created_at: float
    tools: tuple[ToolStep, ...] = ()  # the answer's tool calls with their results, in order


@dataclass(frozen=True, slots=True)
class NewMemory:
    chat_key: str
    conversation_key: str  # the conversation it was said in
    user_id: str
    user_name: str
    scope: MemoryScope
    text: str
    source_turn_id: int | None = None
    created_by: str = "user"  # "user", "tool", "summary"


@dataclass(frozen=True, slots=True)
class FoundTurn:
    """A past user message found by a search: who said it, what, and when (recall dates it)."""

    turn_id: int
    user_id: str
    user_name: str
    text: str  # the turn's user message
    created_at: float  # seconds since the epoch
    score: float = 0.0  # relevance, higher is better: -bm25, or the fused RRF score


@dataclass(frozen=True, slots=True)
class Recalled:
    """What recall brings for one request, as the recalled block's lines, best first.

    ``kept``: what everyone in the conversation may read (its own old messages, its own
    memories): stored with the turn, it stays in the prompt's stable part until a cut.
    ``own``: what only the asker may read (their facts from elsewhere): never stored."""

    kept: tuple[str, ...] = ()
    own: tuple[str, ...] = ()

    @property
    def lines(self) -> tuple[str, ...]:
        return (*self.kept, *self.own)


@dataclass(frozen=True, slots=True)
class InboxItem:
    id: int  # inbox row id (arrival order)
    source: str  # "telegram", ...
    update_id: int  # the platform's id: unique per source, increasing within a lane
    lane: str  # updates of one lane run one at a time, in update_id order
    payload: str  # the update as received (JSON text)
    attempts: int  # claims so far, this one included


@dataclass(frozen=True, slots=True)
class InboxProgress:
    """How far an update got (``inbox_progress``): after a crash, whether its question will
    still be answered, or was."""

    attempts: int  # claims so far (0: none yet)
    done: bool
    answered: bool  # done, and answered: its handler finished, or a burst's turn took it


@dataclass(frozen=True, slots=True)
class RateDecision:
    allowed: bool
    retry_after: float  # seconds until one message is allowed again (0 when allowed)
    first_refusal: bool  # the first refusal since the key was last allowed: say it out loud


@dataclass(frozen=True, slots=True)
class BreakerState:
    failures: int  # provider-side failures in a row
    open_until: float  # database clock (seconds since the epoch); in the past: closed
    # Seconds it stays open from now, by the database clock (0: closed or cooled down), so that
    # a replica whose own clock differs from the database's can still time its cooldown.
    open_for: float = 0.0
