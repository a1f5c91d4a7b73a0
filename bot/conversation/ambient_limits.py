"""What ambient mode remembers per chat: its unprompted answers (the hourly cap, never two in a
row), a cool-down after a stop, and whom it just answered (the follow-up and reply rules).

In memory, per process: it is seconds-to-an-hour of state that a restart may forget (the cap
then starts afresh). Replicas keep their own; the hourly cap also takes a place in the shared
database there, so it holds across them (``bot.conversation.ambient.Ambient``). At most
:data:`MAX_CHATS` chats are held, the least recently seen dropped first; each chat holds at
most ``max_per_hour`` answer times, :data:`MAX_PEOPLE` people and :data:`MAX_MESSAGES`
message ids.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.conversation.ambient_rules import Reason

__all__ = ["MAX_CHATS", "AmbientLimits", "LimitsStatus"]

HOUR = 3600.0
MAX_CHATS = 10_000
MAX_PEOPLE = 64  # people whose follow-ups count, per chat
MAX_MESSAGES = 64  # messages of its exchanges a reply may point to, per chat
_UNPROMPTED_IDS = 8  # the messages it chose to answer, until their turns are done

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class LimitsStatus:
    """What ``/ambient status`` shows of a chat's limits."""

    answers_this_hour: int
    cooldown_left: float  # seconds, 0 when none


@dataclass(slots=True)
class _Chat:
    answers: deque[float] = field(default_factory=deque)  # unprompted answers, last hour
    last_was_unprompted: bool = False  # the last unaddressed message got an answer
    quiet_until: float = 0.0
    last_unprompted: float | None = None
    people: OrderedDict[str, float] = field(default_factory=OrderedDict)  # user -> answered at
    messages: OrderedDict[str, float] = field(default_factory=OrderedDict)  # id -> answered at
    unprompted_ids: deque[str] = field(default_factory=lambda: deque(maxlen=_UNPROMPTED_IDS))


class AmbientLimits:
    """The per-chat state; ``clock`` is monotonic seconds (tests pass their own)."""

    def __init__(
        self,
        max_per_hour: int,
        cooldown: float,
        follow_up: float,
        *,
        clock: Clock = time.monotonic,
        max_chats: int = MAX_CHATS,
    ) -> None:
        self.max_per_hour = max_per_hour
        self.cooldown = cooldown
        self.follow_up = follow_up
        self.clock = clock
        self.max_chats = max_chats
        self._chats: OrderedDict[str, _Chat] = OrderedDict()

    def __len__(self) -> int:
        return len(self._chats)

    # -- asking ------------------------------------------------------------------------------

    def refusal(self, chat_key: str) -> Reason | None:
        """Why an unprompted answer may not be given now (None: it may)."""
        chat, now = self._chat(chat_key), self.clock()
        if now < chat.quiet_until:
            return Reason.COOLDOWN
        if chat.last_was_unprompted:
            return Reason.IN_A_ROW
        _forget_before(chat.answers, now - HOUR)
        if len(chat.answers) >= self.max_per_hour:
            return Reason.HOURLY_CAP
        return None

    def in_exchange(self, chat_key: str, user_id: str) -> bool:
        """It answered this person here within ``follow_up`` seconds."""
        chat = self._chats.get(chat_key)
        at = chat.people.get(user_id) if chat is not None else None
        return at is not None and self.clock() - at <= self.follow_up

    def of_exchange(self, chat_key: str, message_id: str | None) -> bool:
        """``message_id`` is a message it answered here within ``follow_up`` seconds."""
        chat = self._chats.get(chat_key)
        if chat is None or message_id is None:
            return False
        at = chat.messages.get(message_id)
        return at is not None and self.clock() - at <= self.follow_up

    def just_spoke_unprompted(self, chat_key: str) -> bool:
        """Its last unprompted answer here was within ``follow_up`` seconds."""
        chat = self._chats.get(chat_key)
        at = chat.last_unprompted if chat is not None else None
        return at is not None and self.clock() - at <= self.follow_up

    def status(self, chat_key: str) -> LimitsStatus:
        chat = self._chats.get(chat_key)
        if chat is None:
            return LimitsStatus(0, 0.0)
        now = self.clock()
        _forget_before(chat.answers, now - HOUR)
        return LimitsStatus(len(chat.answers), max(0.0, chat.quiet_until - now))

    # -- telling -----------------------------------------------------------------------------

    def spend(self, chat_key: str, message_id: str | None) -> None:
        """It answers this unaddressed message: one of the hour's, and the next waits."""
        chat, now = self._chat(chat_key), self.clock()
        chat.answers.append(now)
        chat.last_was_unprompted = True
        chat.last_unprompted = now
        if message_id is not None:
            chat.unprompted_ids.append(message_id)

    def left(self, chat_key: str) -> None:
        """An unaddressed message went unanswered: the next one may be answered again."""
        chat = self._chats.get(chat_key)
        if chat is not None:
            chat.last_was_unprompted = False

    def stop(self, chat_key: str) -> None:
        """Someone told it to stop: no unprompted answer for ``cooldown`` seconds."""
        chat = self._chat(chat_key)
        chat.quiet_until = self.clock() + self.cooldown
        chat.last_was_unprompted = False

    def answered(self, chat_key: str, user_id: str, message_id: str | None) -> None:
        """It answered this person's message here (addressed or not)."""
        chat, now = self._chat(chat_key), self.clock()
        _remember(chat.people, user_id, now, MAX_PEOPLE)
        if message_id is None:
            return
        _remember(chat.messages, message_id, now, MAX_MESSAGES)
        if message_id in chat.unprompted_ids:
            chat.unprompted_ids.remove(message_id)
        else:  # an addressed answer came between: the next unprompted one is not "in a row"
            chat.last_was_unprompted = False

    def _chat(self, chat_key: str) -> _Chat:
        chat = self._chats.get(chat_key)
        if chat is None:
            chat = self._chats[chat_key] = _Chat()
            while len(self._chats) > self.max_chats:
                self._chats.popitem(last=False)
        else:
            self._chats.move_to_end(chat_key)
        return chat


def _forget_before(times: deque[float], cutoff: float) -> None:
    while times and times[0] <= cutoff:
        times.popleft()


def _remember(seen: OrderedDict[str, float], key: str, at: float, most: int) -> None:
    seen[key] = at
    seen.move_to_end(key)
    while len(seen) > most:
        seen.popitem(last=False)
