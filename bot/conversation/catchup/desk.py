"""``/catchup`` and the admin API's catch-up: where one may be made, what it reads, what it costs.

A catch-up reads the asker's conversation only (its transcript: :mod:`bot.storage.transcript`),
so another chat's words, another topic's, and anything a ``/clear`` deleted or a ``/reset``
cut off never reach it. A private chat has no group to catch up on, and a group kept per person
(``/scope user``) has no shared conversation: both are told so. It meets the daily budgets as a
turn does (checked before, each model call booked on the asker as it completes), takes an LLM
slot per call, and runs one at a time per person and conversation. Nothing anyone wrote is
logged, only counts.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from bot.context import ChatContext, Scope, display_name
from bot.conversation.billing import Meter
from bot.conversation.catchup.digest import Digester
from bot.conversation.catchup.lines import clock, lines_of, within
from bot.conversation.catchup.span import Picked, Span, checked, parse_span, pick
from bot.conversation.commands import Commands
from bot.conversation.service import ChatService
from bot.errors import CatchupRefusedError, UserFacingError
from bot.llm.tokens import TokenCounter, get_counter
from bot.plugins.commands import CommandInfo, CommandResult
from bot.storage.transcript import Said, Transcripts
from bot.values import Usage

__all__ = ["CATCHUP_COMMAND", "CatchUp", "CatchupReport", "add_catchup_command", "quiet"]

log = logging.getLogger(__name__)

CATCHUP_COMMAND = CommandInfo(
    "catchup", "What was said here since your last message (/catchup 2h, /catchup 50)"
)
PRIVATE = (
    "/catchup sums up what a group said while you were away; here it is only you and me."
    " Use it in a group."
)
PER_PERSON = (
    "In this chat each person has their own conversation with me (/scope user), so there is"
    " no shared conversation for me to catch you up on."
)
_MENTION = re.compile(r"@(?=\w)")
_NAMES_SHOWN = 3


@dataclass(frozen=True, slots=True)
class CatchupReport:
    """One catch-up: the reply to post, and what it read and cost."""

    reply: str  # the header line and the summary, as posted ("" summary: a notice alone)
    summary: str  # what the model wrote ("" when there was nothing to summarise)
    conversation_key: str
    messages: int  # messages summarised
    left_out: int  # older messages of the span not read (the token or message cap)
    speakers: tuple[str, ...]  # who spoke in it, most messages first
    first_at: float | None
    last_at: float | None
    calls: int  # model calls made
    usage: Usage


def quiet(text: str) -> str:
    """``text`` with every ``@name`` broken by an invisible word joiner: a digest names people,
    it never pings them (on Telegram a reply pings its asker; Discord's pings are set apart)."""
    return _MENTION.sub("@\u2060", text)


class CatchUp:
    def __init__(self, service: ChatService, store: Transcripts) -> None:
        self.service = service
        self.settings = service.settings.catchup
        self.store = store
        self._running: set[str] = set()

    async def command(self, ctx: ChatContext, args: str) -> CommandResult:
        """``/catchup [2h | 50]``: the reply is the asker's; refusals only they see."""
        try:
            key = self._conversation(ctx)
            report = await self.run(ctx, key, parse_span(args, self.settings))
        except UserFacingError as exc:  # a bad span, a spent budget, the model failing
            return CommandResult(exc.chat_text, ok=False, private=True)
        return CommandResult(report.reply, private=not report.messages)  # "nothing": theirs

    async def for_operator(
        self,
        ctx: ChatContext,
        conversation_key: str,
        *,
        hours: float | None = None,
        messages: int | None = None,
    ) -> CatchupReport:
        """The admin API's catch-up of one conversation of ``ctx``'s chat (default: its last
        ``catchup.max_messages`` messages). Raises :class:`CatchupRefusedError` (a span past
        the limits, a conversation of another chat) or the model's ``LLMError``."""
        if conversation_key != ctx.chat_key and not conversation_key.startswith(f"{ctx.chat_key}:"):
            raise CatchupRefusedError(
                "catchup: conversation of another chat",
                chat_text="that conversation is not one of this chat's",
            )
        if hours is None:
            span = Span(messages=messages or self.settings.max_messages)
        else:
            span = Span(hours=hours, messages=messages)
        return await self.run(ctx, conversation_key, checked(span, self.settings))

    def _conversation(self, ctx: ChatContext) -> str:
        if ctx.is_private:
            raise CatchupRefusedError("catchup: private chat", chat_text=PRIVATE)
        if self.service.scope_for(ctx) is Scope.USER:
            raise CatchupRefusedError("catchup: per-person conversations", chat_text=PER_PERSON)
        return self.service.conversation_key(ctx)

    async def run(self, ctx: ChatContext, key: str, span: Span) -> CatchupReport:
        with self._one_at_a_time(f"{key}|{ctx.user_id}"):
            await self.service.budgets.check(ctx)  # as a turn: against what was booked
            cap = self.settings.max_messages
            since = time.time() - span.hours * 3600 if span.hours is not None else 0.0
            said = await self.store.said(key, since, span.messages or cap + 1)
            picked = pick(said, span, ctx.user_id, cap)
            if not picked.messages:
                notice = _nothing(span, picked)
                return CatchupReport(notice, "", key, 0, 0, (), None, None, 0, Usage())
            return await self._summarised(ctx, key, span, picked)

    async def _summarised(
        self, ctx: ChatContext, key: str, span: Span, picked: Picked
    ) -> CatchupReport:
        settings = self.settings
        model = settings.model or self.service.presets.model(ctx)
        counter = await _loaded(self._counter(model))
        # a small model's window bounds a call too (half of it: the rest is instructions, reply)
        chunk = min(settings.chunk_tokens, self.service.settings.llm.context_window // 2)
        lines = lines_of(picked.messages, counter.count_text, chunk // 2)
        kept, dropped = within(lines, settings.max_input_tokens)
        limit = self.service.settings.limits.max_output_tokens
        digester = Digester(
            self.service.llm,
            Meter(counter),
            self.service.queues.llm_slot,
            chunk_tokens=chunk,
            max_output_tokens=min(settings.max_output_tokens, limit or settings.max_output_tokens),
            model=model,
            book=lambda used: self._book(ctx, used),
        )
        digest = await digester.digest(kept, ctx.user_name or ctx.user_id)
        messages = [line.said for line in kept]
        speakers = _speakers(messages)
        left_out = dropped + int(picked.more)
        header = _header(span, picked, len(messages), speakers, dropped)
        log.info(
            "catchup chat=%s conv=%s user=%s messages=%d left_out=%d calls=%d tokens=%d",
            ctx.chat_key, key, ctx.user_id, len(messages), left_out, digest.calls,
            digest.usage.total_tokens,
        )  # fmt: skip
        summary = quiet(digest.text) or "(the model wrote nothing)"
        return CatchupReport(
            reply=quiet(header) + "\n\n" + summary,
            summary=summary,
            conversation_key=key,
            messages=len(messages),
            left_out=left_out,
            speakers=speakers,
            first_at=messages[0].created_at,
            last_at=messages[-1].created_at,
            calls=digest.calls,
            usage=digest.usage,
        )

    async def _book(self, ctx: ChatContext, used: Usage) -> None:
        """One call's tokens on the asker's and the chat's bill, as a turn's are."""
        with self.service.budgets.booking(ctx, used):
            await self.service.store.book_usage(ctx.chat_key, ctx.user_id, ctx.user_name, used)

    def _counter(self, model: str | None) -> TokenCounter:
        if model is None or model == self.service.llm.model:
            return self.service.counter
        return get_counter(model)

    @contextmanager
    def _one_at_a_time(self, key: str) -> Iterator[None]:
        if key in self._running:
            raise CatchupRefusedError(
                "catchup: already running",
                chat_text="I'm still writing your catch-up; it will be here in a moment.",
            )
        self._running.add(key)
        try:
            yield
        finally:
            self._running.discard(key)


def add_catchup_command(commands: Commands, catchup: CatchUp) -> None:
    """Register ``/catchup`` (``catchup.enabled``)."""
    commands.register(CATCHUP_COMMAND, catchup.command)


async def _loaded(counter: TokenCounter) -> TokenCounter:
    if not counter.loaded:  # 0.5 s the first time in a process: not on the loop
        await asyncio.to_thread(counter.load)
    return counter


def _speakers(messages: Sequence[Said]) -> tuple[str, ...]:
    counts = Counter(display_name(m.user_name or m.user_id) or "someone" for m in messages)
    return tuple(name for name, _ in counts.most_common())


def _header(span: Span, picked: Picked, count: int, speakers: Sequence[str], dropped: int) -> str:
    shown = list(speakers[:_NAMES_SHOWN])
    others = len(speakers) - len(shown)
    if others:
        shown.append(f"{others} other{'s' if others > 1 else ''}")
    names = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
    said = f"{count} message{'s' if count != 1 else ''} from {names}"
    if span.hours is not None:
        line = f"Catch-up of the last {_duration(span.hours)}: {said}."
    elif span.messages is not None:
        line = f"Catch-up of the last {said}."
    elif picked.after is not None:
        line = f"Catch-up since your last message ({clock(picked.after.created_at)} UTC): {said}."
    else:
        line = f"Catch-up of the latest {said} (none of yours among them)."
    if dropped:
        line += f" The {dropped} oldest were left out: more than one catch-up reads."
    elif picked.more:
        line += " Older ones were left out: more than one catch-up reads."
    return line


def _nothing(span: Span, picked: Picked) -> str:
    if span.hours is not None:
        return f"Nothing was said here in the last {_duration(span.hours)} that I can see."
    if picked.after is not None:
        return (
            f"Nothing new here since your last message ({clock(picked.after.created_at)} UTC)."
            " For earlier ones: /catchup 2h, or /catchup 50."
        )
    return "I have nothing from this conversation to catch you up on yet."


def _duration(hours: float) -> str:
    if hours < 1:
        minutes = round(hours * 60)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return "hour" if hours == 1 else f"{hours:g} hours"
