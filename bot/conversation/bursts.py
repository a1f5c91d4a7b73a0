"""Bursts: a person's quick messages answered as one turn, each still stored as itself.

People write in bursts ("hey" / "can you" / "summarise this"). Answered one by one they get
three answers, the first to "hey". So every admitted message *arrives* here (no await: its place
in line is kept) and waits for its conversation's lock as before. The message that gets the lock
first -- the burst's *leader* -- waits until ``chat.burst_window`` has passed since the last
message its sender sent to that conversation, then *gathers* the sender's messages queued right
behind it (text only, at most ``chat.burst_max_messages``, within the input limit). Those are
answered by the leader's turn: when they get the lock they find themselves taken and end with
:class:`MessageFolded`, which adapters treat as a quiet refusal (nothing to post). A message that
arrives after the leader stopped gathering (its model call is on the way) leads the next burst:
it is answered next, never refused.

The wait is the cost: an answer comes ``burst_window`` after the last message of its burst.
``0`` switches gathering off. A message with attachments neither gathers nor is gathered (its
images belong to its own turn), and callers that need one answer per request (the HTTP API)
ask for none.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from bot.context import ChatContext
from bot.conversation.edits import Edits, Waiting
from bot.errors import MessageFolded, UserFacingError
from bot.guardrails.rate_limit import Place
from bot.platform.held_messages import Later, MoreMessages
from bot.values import BurstMessage

__all__ = [
    "Arrival",
    "Bursts",
    "Later",
    "MessageFolded",
    "MoreMessages",
    "burst_query",
    "burst_turn",
    "waited_text",
]

_POLL = 0.25  # seconds between looks for later messages an adapter holds (``more``)


log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class Arrival:
    """One admitted message in line for its conversation."""

    text: str
    message_id: str | None
    alone: bool  # it has attachments, or its caller wants its own answer
    waiting: Waiting | None  # where an edit lands while it waits (bot.conversation.edits)
    place: Place = field(default_factory=lambda: Place(None))  # among requests in flight
    at: float = field(default_factory=time.monotonic)
    wall: float = field(default_factory=time.time)  # stored as the message's time
    taken: bool = False  # gathered into an earlier message's turn
    # an unaddressed follow-up waiting to be gathered (True) or left (False): nobody answers it
    joined: asyncio.Future[bool] | None = None

    def stored(self, text: str) -> BurstMessage:
        return BurstMessage(text, self.message_id, self.wall)

    @property
    def latest_text(self) -> str:
        """Its text as an edit made while it waits left it."""
        edited = self.waiting.edited if self.waiting is not None else None
        return edited if edited is not None else self.text


class Bursts:
    """Arrivals per sender per conversation; an entry lives while its message is in line."""

    def __init__(self, window: float, max_messages: int, max_chars: int) -> None:
        self.window = window
        self.max_messages = max_messages
        self.max_chars = max_chars
        self._lines: dict[tuple[str, str], list[Arrival]] = {}
        self._gathering: dict[tuple[str, str], Arrival] = {}  # leaders waiting out the window

    def __len__(self) -> int:
        return len(self._lines)

    def arrive(
        self,
        key: str,
        user_id: str,
        text: str,
        message_id: str | None,
        *,
        alone: bool,
        waiting: Waiting | None = None,
    ) -> Arrival:
        """A message admitted to conversation ``key`` (no await: call it on arrival)."""
        arrival = Arrival(text, message_id, alone, waiting)
        self._lines.setdefault((key, user_id), []).append(arrival)
        return arrival

    def joins(self, key: str, user_id: str, *, alone: bool) -> bool:
        """A message arriving now will be gathered into its sender's burst being gathered
        (there is room): it needs no place among the requests in flight."""
        leader = self._gathering.get((key, user_id))
        if alone or leader is None:
            return False
        return len(self._behind(key, user_id, leader)) + 1 < self.max_messages

    async def join(self, key: str, ctx: ChatContext, text: str) -> bool:
        """An unaddressed group message from someone whose burst is being gathered ("hey @bot"
        / "can you" / "summarise this"): it waits until it is in that turn on its way to the
        store (True), or is left (False: the burst was full, or its leader failed; the caller
        overhears it as usual)."""
        if not self.joins(key, ctx.user_id, alone=False):
            return False
        arrival = self.arrive(key, ctx.user_id, text, ctx.message_id, alone=False)
        arrival.joined = asyncio.get_running_loop().create_future()
        try:
            return await arrival.joined
        finally:
            self.leave(key, ctx.user_id, arrival)

    @contextlib.asynccontextmanager
    async def in_line(
        self,
        key: str,
        ctx: ChatContext,
        text: str,
        alone: bool,
        waiting: Waiting | None,
        place: Place,
    ) -> AsyncIterator[Arrival]:
        """The message in line while it waits and is answered (entering does not suspend:
        arrival order holds)."""
        arrival = self.arrive(key, ctx.user_id, text, ctx.message_id, alone=alone, waiting=waiting)
        arrival.place = place
        try:
            yield arrival
        finally:
            self.leave(key, ctx.user_id, arrival)

    def leave(self, key: str, user_id: str, arrival: Arrival) -> None:
        """Out of line: answered, folded, refused or cancelled (idempotent)."""
        line = self._lines.get((key, user_id))
        if line is None or arrival not in line:
            return
        line.remove(arrival)
        if not line:
            del self._lines[(key, user_id)]

    async def gather(
        self, key: str, user_id: str, leader: Arrival, more: MoreMessages | None = None
    ) -> list[Arrival]:
        """The leader's burst, oldest first (the leader alone when off or alone): waits until
        ``window`` passed since the sender's last message behind it, then takes those."""
        if self.window <= 0 or leader.alone:
            return [leader]
        line = (key, user_id)
        self._gathering[line] = leader
        behind: list[Arrival] = []
        gathered = False
        try:
            while True:
                if more is not None:  # messages the adapter holds back: in line now
                    for later in await more():
                        self._adopt(key, user_id, later)
                behind = self._behind(key, user_id, leader)
                newest = behind[-1].at if behind else leader.at
                left = newest + self.window - time.monotonic()
                if left <= 0 or len(behind) + 1 >= self.max_messages:
                    break
                await asyncio.sleep(min(left, _POLL) if more is not None else left)
            gathered = True
        finally:
            if self._gathering.get(line) is leader:
                del self._gathering[line]
            for waiting in self._lines.get(line, []):  # follow-ups left out: overheard
                if not (gathered and waiting in behind):
                    _settle(waiting, False)
        for arrival in behind:
            arrival.taken = True
        for arrival in behind:  # answered by this turn: they wait for nothing any more
            await arrival.place.release()
        return [leader, *behind]

    def _adopt(self, key: str, user_id: str, later: Later) -> None:
        """``later`` in line behind the leader, told once whether its turn took it."""
        arrival = self.arrive(key, user_id, later.text, later.message_id, alone=False)
        joined = arrival.joined = asyncio.get_running_loop().create_future()

        def told(done: asyncio.Future[bool]) -> None:
            self.leave(key, user_id, arrival)
            later.taken(not done.cancelled() and done.result())

        joined.add_done_callback(told)

    @staticmethod
    def untake(burst: list[Arrival]) -> None:
        """The leader failed before its turn was stored: the others are answered on their
        own (each in turn, as if there had been no burst); unaddressed follow-ups are
        overheard."""
        for arrival in burst[1:]:
            arrival.taken = False
            _settle(arrival, False)

    @staticmethod
    def settle(burst: list[Arrival], stored: bool = True) -> None:
        """The leader's turn, with the whole burst, is stored (``stored``), or its write
        failed: the follow-ups nobody else answers are told which."""
        for arrival in burst[1:]:
            _settle(arrival, stored)

    def _behind(self, key: str, user_id: str, leader: Arrival) -> list[Arrival]:
        """The sender's messages right behind ``leader`` that may join it: text only, within
        the message count and the input limit."""
        line = self._lines.get((key, user_id), [])
        if leader not in line:
            return []
        behind: list[Arrival] = []
        chars = len(leader.latest_text)
        for arrival in line[line.index(leader) + 1 :]:
            chars += len(arrival.latest_text) + 1
            if arrival.alone or arrival.taken or chars > self.max_chars:
                break
            if len(behind) + 1 >= self.max_messages:
                break
            behind.append(arrival)
        return behind


def _settle(arrival: Arrival, taken: bool) -> None:
    if arrival.joined is not None and not arrival.joined.done():
        arrival.joined.set_result(taken)


def burst_turn(
    ctx: ChatContext, key: str, burst: list[Arrival], text_of: Callable[[Arrival], str]
) -> tuple[ChatContext, str, list[BurstMessage]]:
    """The turn a burst makes: its last message is the turn's (its id, its text); the
    earlier ones are stored before it, each as itself. ``text_of``: a gathered message's
    text as it reads now (edits made while it waited)."""
    if len(burst) == 1:
        return ctx, burst[0].text, []
    texts = [burst[0].text, *map(text_of, burst[1:])]
    earlier = [a.stored(t) for a, t in zip(burst[:-1], texts, strict=False)]
    log.info("burst answered as one turn conv=%s messages=%d", key, len(burst))
    return dataclasses.replace(ctx, message_id=burst[-1].message_id), texts[-1], earlier


def waited_text(edits: Edits, key: str) -> Callable[[Arrival], str]:
    """A gathered message's text: an edit made while it waited counts (one edited to
    nothing or too much keeps the text it arrived with)."""

    def text(arrival: Arrival) -> str:
        try:
            return edits.start(key, arrival.message_id, arrival.waiting, arrival.text)
        except UserFacingError:
            return arrival.text

    return text


def burst_query(earlier: Sequence[BurstMessage], query: str) -> str:
    """What recall and knowledge search for when a turn answers several messages."""
    return "\n".join([*(m.text for m in earlier), query])
