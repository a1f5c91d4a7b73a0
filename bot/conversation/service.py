"""ChatService: one user message in, one answer out, with the history kept straight.

Per message: system prompt (global or the chat's override) + summary + the trimmed history
window + overheard chatter + recalled memories (quoted data in a user-role message,
``bot.conversation.prompt_safety``) + the user's message -> the model (with the tool loop) -> the
turn is
stored.
Messages of one conversation run strictly in arrival order; different conversations run
concurrently. If the model fails for good, the user's message stays stored as *unanswered* and the
error (with its chat-safe text) reaches the adapter.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from bot.config import Settings
from bot.context import ChatContext, Scope
from bot.conversation.locks import KeyedLocks
from bot.conversation.prompt_safety import quoted_summary, recalled_message, with_speaker
from bot.conversation.reply_cap import REPLY_LIMIT, Cut, SplitReply, StreamCap, cut, fit_messages
from bot.conversation.tool_runner import ToolRunner
from bot.errors import ContextTooLongError, LLMContextLengthError, UserFacingError
from bot.guardrails.access import AccessDeniedError, AccessPolicy
from bot.guardrails.admins import AdminPolicy
from bot.guardrails.budgets import Budgets, BudgetSpentError
from bot.guardrails.rate_limit import InFlight, MessageRateLimiter, Once
from bot.guardrails.sanitise import clean_text
from bot.history import trim_history
from bot.history.store import (
    ChatPreferences,
    ChatSettingsStore,
    ClearResult,
    HistoryStore,
    NewTurn,
    Overheard,
    OverheardStore,
    StoredTurn,
    Usage,
)
from bot.llm.client import Completion, LLMClient, StreamItem, TextDelta, ToolCall
from bot.llm.tokens import TokenCounter, get_counter
from bot.memory.compaction import Compactor
from bot.memory.provider import MemoryProvider, NoMemory

log = logging.getLogger(__name__)

_NO_ANSWER = "Sorry, I could not come up with an answer to that."
_CONTEXT_RETRY_FACTOR = 0.7  # after a provider's context_length_exceeded, retry once this smaller


class Store(HistoryStore, OverheardStore, ChatSettingsStore, Protocol):
    """What the service needs: history, overheard group messages, per-chat preferences."""


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    turn_id: int
    conversation_key: str
    usage: Usage
    model: str
    finish_reason: str

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
    conversation_key: str
    scope: Scope
    turns_in_context: int
    turns_stored: int
    unanswered: int
    window_tokens: int
    budget: int
    undelivered: int = 0  # answered, but the platform never took the reply


class ChatService:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        llm: LLMClient,
        *,
        memory: MemoryProvider | None = None,
        tools: ToolRunner | None = None,
        counter: TokenCounter | None = None,
        max_tool_rounds: int = 5,
        admins: AdminPolicy | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.llm = llm
        self.memory: MemoryProvider = memory or NoMemory()
        self.tools = tools
        self.counter = counter or get_counter(llm.model)
        self.max_tool_rounds = max_tool_rounds
        self._locks = KeyedLocks()
        self._prefs: dict[str, ChatPreferences] = {}
        self.compactor: Compactor | None = None  # set by the App when memory.summarize is on
        self.admins = admins or AdminPolicy(settings)  # who is an admin: bot.guardrails.admins
        self.access = AccessPolicy(settings, self.admins)
        limits = settings.limits
        cap = limits.max_concurrent_llm_calls
        self._llm_slots = asyncio.Semaphore(cap) if cap else None
        self._rate = MessageRateLimiter(limits.messages_per_minute, limits.burst)
        self._in_flight = InFlight(limits.one_in_flight)
        self._refused_chats = Once(every=86400)
        self._told_spent = Once(every=600)
        self.budgets = Budgets(settings.limits, store, self.access)
        self._warned_no_usage = False
        self._max_output = min(settings.llm.max_output_tokens, limits.max_output_tokens or 10**9)
        self._max_reply = limits.max_reply_chars

    async def start(self) -> None:
        """Load per-chat preferences so a conversation key is known without awaiting."""
        self._prefs = await self.store.load_preferences()

    # -- whose conversation ------------------------------------------------------------------

    def scope_for(self, ctx: ChatContext) -> Scope:
        prefs = self._prefs.get(ctx.chat_key)
        return prefs.scope if prefs and prefs.scope else self.settings.chat.default_scope

    def conversation_key(self, ctx: ChatContext) -> str:
        return ctx.conversation_key(self.scope_for(ctx))

    async def set_scope(self, ctx: ChatContext, scope: Scope) -> None:
        current = self._prefs.get(ctx.chat_key, ChatPreferences())
        prefs = ChatPreferences(scope=scope, system_prompt=current.system_prompt)
        await self.store.save_preferences(ctx.chat_key, prefs)
        self._prefs[ctx.chat_key] = prefs

    async def set_system_prompt(self, ctx: ChatContext, prompt: str | None) -> None:
        current = self._prefs.get(ctx.chat_key, ChatPreferences())
        prefs = ChatPreferences(scope=current.scope, system_prompt=prompt or None)
        await self.store.save_preferences(ctx.chat_key, prefs)
        self._prefs[ctx.chat_key] = prefs

    def system_prompt(self, ctx: ChatContext) -> str:
        prefs = self._prefs.get(ctx.chat_key)
        if prefs and prefs.system_prompt:
            return prefs.system_prompt
        return self.settings.chat.system_prompt

    # -- chatting ------------------------------------------------------------------------------

    async def chat(self, ctx: ChatContext, text: str, *, split: SplitReply | None = None) -> Reply:
        """Answer ``text`` without streaming.

        ``split``: how the adapter cuts a reply into messages; the answer is kept within
        ``limits.max_reply_messages`` of them (and always within ``limits.max_reply_chars``).
        """
        turn = self._turn(ctx, text, streaming=False, split=split)
        async with contextlib.aclosing(turn) as events:
            async for event in events:
                if isinstance(event, Done):
                    return event.reply
        raise AssertionError("a turn always ends with Done")  # pragma: no cover

    def stream(
        self, ctx: ChatContext, text: str, *, split: SplitReply | None = None
    ) -> AsyncGenerator[ChatEvent, None]:
        """Answer ``text``, yielding text deltas and tool events, then :class:`Done`.

        Iterate it to the end, or wrap it in ``contextlib.aclosing`` when you may stop early:
        the conversation stays locked until the generator finishes or is closed. An answer
        past ``limits.max_reply_chars`` ends with a delta carrying the note; the Done reply's
        text (cut further to fit ``split``'s messages, see :meth:`chat`) is what is stored.
        """
        return self._turn(ctx, text, streaming=True, split=split)

    async def _turn(
        self, ctx: ChatContext, text: str, *, streaming: bool, split: SplitReply | None
    ) -> AsyncGenerator[ChatEvent, None]:
        self._admit(ctx)
        text = clean_text(text.strip())  # adapters clean it; a plugin's adapter may not
        if not text:
            raise UserFacingError("empty message", chat_text="Send me some text to answer.")
        limit = self.settings.limits.max_input_chars or self.settings.chat.max_input_chars
        if len(text) > limit:
            raise UserFacingError(
                f"message of {len(text)} characters over the limit",
                chat_text=f"That message is too long ({len(text)} characters; the limit is "
                f"{limit}). Please send something shorter.",
            )
        key = self.conversation_key(ctx)  # no await before the lock: arrival order holds
        async with self._admitted(ctx, key):
            try:
                await self.budgets.check(ctx)  # in the lock: the turn before has counted its own
            except BudgetSpentError as exc:  # said once in a while, not to every message
                exc.notify = self._told_spent.first(f"{_rate_key(ctx)}|{exc.chat_text}")
                raise
            self.llm.check_available()  # the provider is known to be down: told, nothing stored
            history = await self.store.load_window(key, self.settings.history.max_turns)
            overheard = await self._overheard(ctx, key)
            shared = _is_shared(key)
            user_message = {"role": "user", "content": _speaker_text(ctx, text) if shared else text}
            prefix = await self._prefix(ctx, key)
            recalled = await self._recalled(ctx, key, text, history[0].turn_id if history else None)
            tools = self.tools.definitions(ctx) if self.tools else []
            budget = self._budget([*prefix, *recalled], user_message, tools)
            messages = [
                *prefix,
                *_history_messages(history, shared),
                *(_overheard_message(o, shared) for o in overheard),
                *recalled,
                user_message,
            ]
            window = self._trim(messages, budget, text)
            # The user's message is written while the request is on its way: the write takes
            # well under a millisecond, the model at least tens of them (bench/).
            new_turn = NewTurn(
                key,
                ctx.chat_key,
                ctx.user_id,
                ctx.user_name,
                text,
                ctx.message_id,
                overheard=tuple(o.overheard_id for o in overheard),
            )
            begin = asyncio.ensure_future(self.store.begin_turn(new_turn))
            bill = _Bill()  # every model call's tokens, booked even when the turn fails later
            try:
                answer: list[dict[str, Any]] = []
                final: Completion | None = None
                final_cut: Cut | None = None
                async for event in self._answer(
                    ctx, messages, window, budget, tools, streaming, bill
                ):
                    if isinstance(event, _RoundDone):
                        answer.extend(event.messages)
                        final, final_cut = event.completion, event.cut
                    else:
                        yield event
                assert final is not None
                if split is not None and not final.tool_calls:
                    final = await self._fit(final, final_cut, split, answer)
                turn_id = await asyncio.shield(begin)
                with self.budgets.booking(ctx, bill.total):
                    await self.store.complete_turn(turn_id, answer, bill.total, final.model)
                if self.compactor is not None:
                    self.compactor.turn_done(ctx, key)  # background: never delays this reply
            except BaseException as exc:
                with self.budgets.booking(ctx, bill.total):
                    await self._fail(begin, exc, key, bill.total)
                raise
            reply = Reply(final.text, turn_id, key, bill.total, final.model, final.finish_reason)
        yield Done(reply)  # after the lock is released: a consumer may stop here

    def _admit(self, ctx: ChatContext) -> None:
        """Access, then the user's message rate: first, so that a flood of anything (too long,
        over budget) meets the rate and is told once. A chat without access is told once a day
        ("ignored politely"), not once per message."""
        try:
            self.access.check(ctx)
        except AccessDeniedError as exc:
            exc.notify = self._refused_chats.first(ctx.chat_key)
            raise
        if not self.access.exempt(ctx):
            self._rate.take(_rate_key(ctx))

    @contextlib.asynccontextmanager
    async def _admitted(self, ctx: ChatContext, key: str) -> AsyncIterator[None]:
        """One request in flight per user per conversation (checked before anything is stored
        or awaited), then the conversation's lock."""
        if self.access.exempt(ctx):
            async with self._locks.hold(key):
                yield
            return
        with self._in_flight.hold(f"{key}|{ctx.user_id}"):
            async with self._locks.hold(key):
                yield

    async def _fail(
        self, begin: asyncio.Future[int], exc: BaseException, key: str, usage: Usage
    ) -> None:
        """Mark the turn unanswered, once its user message is stored (even when cancelled);
        the rounds that did run were billed, so their tokens are booked."""
        try:
            turn_id = await asyncio.shield(begin)
            await asyncio.shield(self.store.fail_turn(turn_id, type(exc).__name__, usage))
        except BaseException:  # the store itself failed, or we are cancelled again
            log.exception("could not record the failed turn conv=%s", key)
            return
        log.warning("turn failed conv=%s turn=%d error=%s", key, turn_id, exc)

    async def _answer(
        self,
        ctx: ChatContext,
        messages: list[dict[str, Any]],
        window: list[dict[str, Any]],
        budget: int,
        tools: list[dict[str, Any]],
        streaming: bool,
        bill: _Bill,
    ) -> AsyncIterator[ChatEvent | _RoundDone]:
        """The tool loop: call the model, run its tool calls in parallel, repeat (bounded)."""
        transcript = list(window)
        retried_context = False
        rounds = 0
        while True:
            may_call = bool(tools) and rounds < self.max_tool_rounds
            offer = tools or None
            choice = None if may_call or not tools else "none"  # past the cap: answer in text
            try:
                completion: Completion | None = None
                capped: Cut | None = None
                if streaming:
                    async with contextlib.aclosing(
                        self._streamed(transcript, offer, choice, bill, first=rounds == 0)
                    ) as items:
                        async for item in items:
                            if isinstance(item, TextDelta):
                                yield item
                            elif isinstance(item, Cut):
                                capped = item
                            else:
                                completion = item
                else:
                    async with self._llm_slot():
                        completion = await self.llm.complete(
                            transcript, tools=offer, tool_choice=choice, max_tokens=self._max_output
                        )
                    completion = self._paid(transcript, completion, bill, first=rounds == 0)
                    if len(completion.text) > self._max_reply:
                        log.warning("answer passed limits.max_reply_chars=%d", self._max_reply)
                        capped = cut(completion.text, self._max_reply)
                        completion = _cut_short(completion, capped)
                assert completion is not None
            except LLMContextLengthError:
                if retried_context:
                    raise
                retried_context = True
                budget = int(budget * _CONTEXT_RETRY_FACTOR)
                answered = transcript[len(window) :]
                window = self._trim(messages, budget, "")
                transcript = window + answered
                log.info("provider said context too long; retrying once with budget=%d", budget)
                continue
            if completion.tool_calls and (not may_call or completion.finish_reason == "length"):
                # Tools not offered, or calls cut off at the output limit: never run them.
                completion = replace(completion, tool_calls=())
            if not completion.tool_calls and not completion.text.strip():
                completion = replace(completion, text=_NO_ANSWER)
            assistant = completion.assistant_message()
            transcript.append(assistant)
            if not completion.tool_calls or self.tools is None:
                yield _RoundDone(completion, [assistant], capped)
                return
            for call in completion.tool_calls:
                yield ToolStarted(call)
            results = await asyncio.gather(
                *(self.tools.run(ctx, call) for call in completion.tool_calls)
            )
            tool_messages: list[dict[str, Any]] = []
            for call, result in zip(completion.tool_calls, results, strict=True):
                tool_messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
                yield ToolFinished(call, result)
            transcript.extend(tool_messages)
            yield _RoundDone(completion, [assistant, *tool_messages])
            rounds += 1

    def _paid(
        self, transcript: list[dict[str, Any]], completion: Completion, bill: _Bill, *, first: bool
    ) -> Completion:
        """Put a model call on the turn's bill as soon as it is done (a reader that stops
        later must not lose it); calibrate the token counter from the first call."""
        usage = completion.usage
        if usage is None:  # a server that reports none: budgets still count
            if not self._warned_no_usage:
                self._warned_no_usage = True
                log.warning("the LLM server reports no token usage; budgets use local estimates")
            written = completion.text + "".join(c.name + c.arguments for c in completion.tool_calls)
            usage = Usage(self.counter.count_messages(transcript), self.counter.count_text(written))
            completion = replace(completion, usage=usage)
        elif first and not self.counter.exact and usage.prompt_tokens:
            self.counter.observe(self.counter.count_messages(transcript), usage.prompt_tokens)
        bill.add(usage)
        return completion

    async def _streamed(
        self,
        transcript: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        choice: str | None,
        bill: _Bill,
        *,
        first: bool,
    ) -> AsyncGenerator[StreamItem | Cut, None]:
        """The model's stream, read by a task of its own into a buffer: a slow reader (an
        adapter waiting out a platform's flood control) never holds an LLM slot or the
        provider's connection, which are given back as soon as the model is done.

        Past ``limits.max_reply_chars`` the task hangs up on the model (its rest would be
        paid for and thrown away) and ends the round itself: the text up to the cut, the
        note, the :class:`Cut`, then a Completion billed by our own count."""
        buffer: asyncio.Queue[StreamItem | Cut | Exception | None] = asyncio.Queue()

        async def read() -> None:
            cap = StreamCap(self._max_reply)
            try:
                async with self._llm_slot():
                    stream = self.llm.stream(
                        transcript, tools=tools, tool_choice=choice, max_tokens=self._max_output
                    )
                    async with contextlib.aclosing(stream) as items:
                        async for item in items:
                            if isinstance(item, Completion):
                                item = self._paid(transcript, item, bill, first=first)
                            else:
                                shown, done = cap.feed(item.text)
                                if done is not None:  # leaving closes the model's stream
                                    self._hung_up(transcript, shown, done, bill, buffer)
                                    return
                            buffer.put_nowait(item)
            except Exception as exc:  # handed to the reader, raised there
                buffer.put_nowait(exc)
            finally:
                buffer.put_nowait(None)  # the end, however the task ends

        reader = asyncio.ensure_future(read())
        try:
            while (item := await buffer.get()) is not None:
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            reader.cancel()  # a no-op once it is done
            await asyncio.wait({reader})  # never swallows our own cancellation

    def _hung_up(
        self,
        transcript: list[dict[str, Any]],
        shown: str,
        done: Cut,
        bill: _Bill,
        buffer: asyncio.Queue[StreamItem | Cut | Exception | None],
    ) -> None:
        """End a streamed round at the reply cap: what may still be shown, the note, the cut,
        and a completion billed by our own count (the provider's never arrives)."""
        log.warning("answer passed limits.max_reply_chars=%d; hung up", self._max_reply)
        if shown:
            buffer.put_nowait(TextDelta(shown))
        buffer.put_nowait(TextDelta(done.tail))
        buffer.put_nowait(done)
        # At least what we read: the provider bills what it wrote before it saw us go.
        usage = Usage(self.counter.count_messages(transcript), self.counter.count_text(done.kept))
        bill.add(usage)
        buffer.put_nowait(
            Completion(done.text, finish_reason=REPLY_LIMIT, usage=usage, model=self.llm.model)
        )

    async def _fit(
        self, final: Completion, capped: Cut | None, split: SplitReply, answer: list[dict[str, Any]]
    ) -> Completion:
        """Cut the final text further if the adapter needs more than its message cap for it;
        the stored answer (the last message of ``answer``) follows."""
        most = self.settings.limits.max_reply_messages
        fitted = await fit_messages(final.text, split, most, already=capped)
        if fitted is None:
            return final
        log.info("answer cut to fit limits.max_reply_messages=%d", most)
        final = _cut_short(final, fitted)
        answer[-1] = final.assistant_message()
        return final

    @contextlib.asynccontextmanager
    async def _llm_slot(self) -> AsyncIterator[None]:
        """One of ``limits.max_concurrent_llm_calls``; a message that waits too long is told."""
        slots = self._llm_slots
        if slots is None:
            yield
            return
        try:
            await asyncio.wait_for(slots.acquire(), self.settings.limits.queue_timeout)
        except TimeoutError:
            raise UserFacingError(
                "LLM queue wait over limits.queue_timeout",
                chat_text="I'm answering a lot of people right now; please try again in a minute.",
            ) from None
        try:
            yield
        finally:
            slots.release()

    def admit_command(self, ctx: ChatContext) -> None:
        """A command meets the same access check and message rate as a message (each costs
        a reply); raises ``AccessDeniedError`` or ``RateLimitedError``."""
        self._admit(ctx)

    # -- spending --------------------------------------------------------------------------------

    async def usage_today(self, ctx: ChatContext) -> tuple[int, int]:
        """Tokens used today (UTC) by this user (every chat of the platform) and this chat."""
        return await self.budgets.usage_today(ctx)

    async def usage_total_today(self, *, fresh: bool = False) -> int:
        """Tokens the whole bot used today (UTC)."""
        return await self.budgets.total_today(fresh=fresh)

    # -- group chatter ---------------------------------------------------------------------------

    async def overhear(self, ctx: ChatContext, text: str) -> bool:
        """Keep an unaddressed group message as context for the next answer (bounded).

        Returns False when nothing was kept (private chat, feature off, empty or huge text).
        """
        keep = self.settings.history.context_messages
        text = clean_text(text.strip())  # adapters clean it; a plugin's adapter may not
        if ctx.is_private or keep == 0 or not text or not self.access.allows(ctx):
            return False
        limit = self.settings.limits.max_input_chars or self.settings.chat.max_input_chars
        if len(text) > limit:
            return False
        key = self.conversation_key(ctx)
        message = NewTurn(key, ctx.chat_key, ctx.user_id, ctx.user_name, text, ctx.message_id)
        async with self._locks.hold(key):  # in arrival order with the conversation's turns
            await self.store.record_overheard(message, keep)
        return True

    async def _overheard(self, ctx: ChatContext, key: str) -> list[Overheard]:
        keep = self.settings.history.context_messages
        if ctx.is_private or keep == 0:
            return []
        since = time.time() - self.settings.history.context_max_age
        return (await self.store.load_overheard(key, since))[-keep:]

    async def migrate_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """A chat changed its id (Telegram group -> supergroup): history and settings follow."""
        moved = await self.store.migrate_chat(old_chat_key, new_chat_key)
        prefs = self._prefs.pop(old_chat_key, None)
        if prefs is not None:
            self._prefs.setdefault(new_chat_key, prefs)
        return moved

    # -- context assembly ------------------------------------------------------------------------

    async def _prefix(self, ctx: ChatContext, key: str) -> list[dict[str, Any]]:
        """The system block: the system prompt, then the conversation's summary (quoted)."""
        prefix: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt(ctx)}]
        summary = await self.compactor.summary(key) if self.compactor is not None else None
        if summary is not None:
            shown = summary.text
            limit = 2 * max(self.settings.memory.max_tokens, 100)  # a runaway summary is cut
            if self.counter.count_text(shown) > limit:
                shown = " ".join(shown.split()[: limit // 2]) + " …"
            prefix.append(quoted_summary(shown))
        return prefix

    async def _recalled(
        self, ctx: ChatContext, key: str, text: str, oldest_in_window: int | None
    ) -> list[dict[str, Any]]:
        """Recalled memories as one user-role message of quoted items (none: an empty list),
        capped at ``memory.max_tokens``."""
        recalled = await self.memory.recall(ctx, key, text, before_turn_id=oldest_in_window)
        cap = self.settings.memory.max_tokens
        kept: list[str] = []
        used = 0
        for line in recalled:  # most relevant first: the cap drops the least relevant
            cost = self.counter.count_text(line) + 2
            if used + cost > cap:
                continue  # a long line must not hide shorter ones after it
            kept.append(line)
            used += cost
        return [recalled_message(kept)] if kept else []

    def _budget(
        self,
        prefix: list[dict[str, Any]],
        user_message: dict[str, Any],
        tools: Sequence[Mapping[str, Any]],
    ) -> int:
        """Context window - reply reserve - tool definitions; history capped if configured."""
        llm = self.settings.llm
        budget = llm.context_window - llm.max_output_tokens
        if tools:
            budget -= self.counter.count_text(json.dumps(list(tools)))
        cap = self.settings.history.max_tokens
        if cap is not None:
            budget = min(budget, self.counter.count_messages([*prefix, user_message]) + cap)
        return budget

    def _trim(self, messages: list[dict[str, Any]], budget: int, text: str) -> list[dict[str, Any]]:
        try:
            return trim_history(messages, max_tokens=budget, count_tokens=self._count)
        except ContextTooLongError:
            log.info("message too long for the model: chars=%d budget=%d", len(text), budget)
            raise

    def _count(self, messages: list[dict[str, Any]]) -> int:
        return self.counter.count_messages(messages)

    # -- commands' backing -----------------------------------------------------------------------

    async def reset(self, ctx: ChatContext) -> None:
        key = self.conversation_key(ctx)
        async with self._locks.hold(key):
            await self.store.reset(key, ctx.chat_key, ctx.user_id)

    async def clear(self, ctx: ChatContext) -> ClearResult:
        return await self.store.clear_chat(ctx.chat_key, ctx.user_id, ctx.user_name)

    async def history_info(self, ctx: ChatContext) -> HistoryInfo:
        key = self.conversation_key(ctx)
        stats = await self.store.stats(key)
        history = await self.store.load_window(key, self.settings.history.max_turns)
        prefix = await self._prefix(ctx, key)
        probe = {"role": "user", "content": ""}
        budget = self._budget(prefix, probe, self.tools.definitions(ctx) if self.tools else [])
        messages = prefix + _history_messages(history, _is_shared(key)) + [probe]
        try:
            window = trim_history(messages, max_tokens=budget, count_tokens=self._count)
        except ContextTooLongError:
            window = messages[: len(prefix)]
        return HistoryInfo(
            conversation_key=key,
            scope=self.scope_for(ctx),
            turns_in_context=stats.turns_in_context,
            turns_stored=stats.turns_stored,
            unanswered=stats.unanswered,
            window_tokens=self._count(window[:-1]),
            budget=budget,
            undelivered=stats.undelivered,
        )


class _Bill:
    """The tokens of one turn's model calls so far."""

    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total = Usage()

    def add(self, usage: Usage) -> None:
        self.total = Usage(
            self.total.prompt_tokens + usage.prompt_tokens,
            self.total.completion_tokens + usage.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class _RoundDone:
    completion: Completion
    messages: list[dict[str, Any]]
    cut: Cut | None = None  # the bot cut this round's text at its reply limit


def _cut_short(completion: Completion, done: Cut) -> Completion:
    """A round whose text the bot cut: it ends the turn, its tool calls are never run."""
    return replace(completion, text=done.text, tool_calls=(), finish_reason=REPLY_LIMIT)


def _rate_key(ctx: ChatContext) -> str:
    """The message rate is per user per chat: topics, threads (a Discord thread counts as its
    channel) and scope changes share it."""
    parent = dict(ctx.extra).get("parent") if ctx.extra else None
    chat = f"{ctx.platform}:{parent}" if parent else ctx.chat_key
    return f"{chat}|{ctx.user_id}"


def _is_shared(conversation_key: str) -> bool:
    """Several people write into chat- and thread-scoped conversations."""
    return ":u:" not in conversation_key


def _speaker_text(ctx: ChatContext, text: str) -> str:
    return with_speaker(ctx.user_name or ctx.user_id, text)


def _overheard_message(message: Overheard, shared: bool) -> dict[str, Any]:
    speaker = message.user_name or message.user_id
    return {
        "role": "user",
        "content": with_speaker(speaker, message.text) if shared else message.text,
    }


def _history_messages(turns: Sequence[StoredTurn], shared: bool) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for turn in turns:
        for message in turn.messages:
            if shared and message["role"] == "user":
                content = with_speaker(turn.user_name or turn.user_id, str(message["content"]))
                messages.append({"role": "user", "content": content})
            else:
                messages.append(dict(message))
    return messages
