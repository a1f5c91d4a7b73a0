"""ChatService: one user message in, one answer out, with the history kept straight.

Per message: admission (``admission``: access, rate, one in flight, budgets) -> the prompt
(``prompt``: system prompt, summary, the trimmed history window, overheard chatter, recalled
memories, the user's message) -> the model, with tools (``tool_loop``; streamed through
``stream_buffer``) -> the turn is stored and its tokens booked (``billing``).
Messages of one conversation run strictly in arrival order; different conversations run
concurrently. If the model fails for good, the user's message stays stored as *unanswered* and the
error (with its chat-safe text) reaches the adapter.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, Protocol

from bot.config import Settings
from bot.context import ChatContext, Scope
from bot.conversation.admission import Admission, LLMSlots
from bot.conversation.billing import Bill, Meter
from bot.conversation.events import ChatEvent, Done, HistoryInfo, Reply, ToolFinished, ToolStarted
from bot.conversation.locks import KeyedLocks
from bot.conversation.media_input import MediaInput, UserInput
from bot.conversation.overheard import Overhearing
from bot.conversation.pending_turn import PendingTurn
from bot.conversation.preferences import Preferences
from bot.conversation.prompt import (
    Prompt,
    PromptLimits,
    build_prompt,
    history_cost,
    history_room,
    is_shared,
    system_block,
    user_message,
    window_figures,
)
from bot.conversation.reply_cap import SplitReply
from bot.conversation.tool_loop import Answer, ToolLoop
from bot.conversation.tool_runner import ToolRunner
from bot.conversation.window import Placement, recall_boundary, window_for
from bot.errors import ContextTooLongError
from bot.guardrails.admins import AdminPolicy
from bot.history.store import (
    ChatSettingsStore,
    ClearResult,
    HistoryStore,
    Overheard,
    OverheardStore,
    StoredTurn,
)
from bot.llm.client import LLMClient
from bot.llm.tokens import TokenCounter, get_counter
from bot.media import Attachments
from bot.memory.compaction import Compactor
from bot.memory.provider import MemoryProvider, NoMemory
from bot.storage.coordination import SharedLimits
from bot.storage.prompt_windows import PromptWindows
from bot.storage.values import WindowMark

__all__ = [
    "ChatEvent",
    "ChatService",
    "Done",
    "HistoryInfo",
    "Reply",
    "Store",
    "ToolFinished",
    "ToolStarted",
]

log = logging.getLogger(__name__)


class Store(HistoryStore, OverheardStore, ChatSettingsStore, PromptWindows, Protocol):
    """What the service needs: history, overheard group messages, per-chat preferences, and
    where each conversation's prompt window begins."""


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
        max_tool_rounds: int | None = None,
        admins: AdminPolicy | None = None,
        compactor: Compactor | None = None,
        shared_limits: SharedLimits | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.llm = llm
        self.memory: MemoryProvider = memory or NoMemory()
        self.tools = tools
        self.counter = counter or get_counter(llm.model)
        self.compactor = compactor  # memory.summarize: a summary in every prompt
        self.admins = admins or AdminPolicy(settings)  # who is an admin: bot.guardrails.admins
        self.admission = Admission(settings, store, self.admins, shared=shared_limits)
        self.access = self.admission.access
        self.budgets = self.admission.budgets
        self._locks = KeyedLocks()
        self.prefs = Preferences(store, settings.chat)
        self.overheard = Overhearing(store, settings.history, self.admission.max_input_chars)
        self.media = MediaInput(settings.llm, llm, self.admission.message_text)
        self._limits = PromptLimits.of(settings)
        limits = settings.limits
        self._loop = ToolLoop(
            llm,
            tools,
            Meter(self.counter),
            slot=LLMSlots(limits).slot,
            max_rounds=settings.tools.max_rounds if max_tool_rounds is None else max_tool_rounds,
            max_output=min(settings.llm.max_output_tokens, limits.max_output_tokens or 10**9),
            max_reply=limits.max_reply_chars,
        )

    async def start(self) -> None:
        """Load per-chat preferences so a conversation key is known without awaiting."""
        await self.prefs.load()

    # -- whose conversation, and its settings ------------------------------------------------

    def scope_for(self, ctx: ChatContext) -> Scope:
        return self.prefs.scope(ctx.chat_key)

    def conversation_key(self, ctx: ChatContext) -> str:
        return ctx.conversation_key(self.prefs.scope(ctx.chat_key))

    def system_prompt(self, ctx: ChatContext) -> str:
        return self.prefs.system_prompt(ctx.chat_key)

    async def set_scope(self, ctx: ChatContext, scope: Scope) -> None:
        await self.prefs.set_scope(ctx.chat_key, scope)

    async def set_system_prompt(self, ctx: ChatContext, prompt: str | None) -> None:
        await self.prefs.set_system_prompt(ctx.chat_key, prompt)

    # -- chatting ------------------------------------------------------------------------------

    async def chat(
        self,
        ctx: ChatContext,
        text: str,
        *,
        attachments: Attachments = (),
        split: SplitReply | None = None,
        on_admitted: Callable[[], object] | None = None,
    ) -> Reply:
        """Answer ``text`` without streaming.

        ``split``: how the adapter cuts a reply into messages; the answer is kept within
        ``limits.max_reply_messages`` of them (and always within ``limits.max_reply_chars``).
        ``on_admitted`` runs once the message passed admission and holds the conversation: an
        adapter starts its typing indicator there, so a refused flood costs no platform calls.
        ``attachments``: the message's images and voice notes, as bytes (``bot.media``), or a
        source that downloads them once the message is admitted; the text may then be empty
        (``bot.conversation.media_input`` says what the model sees).
        """
        turn = self._turn(
            ctx, text, attachments, streaming=False, split=split, on_admitted=on_admitted
        )
        async with contextlib.aclosing(turn) as events:
            async for event in events:
                if isinstance(event, Done):
                    return event.reply
        raise AssertionError("a turn always ends with Done")  # pragma: no cover

    def stream(
        self,
        ctx: ChatContext,
        text: str,
        *,
        attachments: Attachments = (),
        split: SplitReply | None = None,
        on_admitted: Callable[[], object] | None = None,
    ) -> AsyncGenerator[ChatEvent, None]:
        """Answer ``text``, yielding text deltas and tool events, then :class:`Done`.

        Iterate it to the end, or wrap it in ``contextlib.aclosing`` when you may stop early:
        the conversation stays locked until the generator finishes or is closed. An answer
        past ``limits.max_reply_chars`` ends with a delta carrying the note; the Done reply's
        text (cut further to fit ``split``'s messages, see :meth:`chat`) is what is stored.
        """
        return self._turn(
            ctx, text, attachments, streaming=True, split=split, on_admitted=on_admitted
        )

    async def admit_command(self, ctx: ChatContext) -> None:
        """A command meets the same access check and message rate as a message (each costs
        a reply); raises ``AccessDeniedError`` or ``RateLimitedError``."""
        await self.admission.admit(ctx)

    async def _turn(
        self,
        ctx: ChatContext,
        text: str,
        attachments: Attachments,
        *,
        streaming: bool,
        split: SplitReply | None,
        on_admitted: Callable[[], object] | None,
    ) -> AsyncGenerator[ChatEvent, None]:
        key = self.conversation_key(ctx)  # no await before admission: arrival order holds
        # access, rate, text, one in flight: checked before anything is stored; the lock is
        # entered right after, so messages queue for it in the order they arrived
        admitted = self.admission.admitted(ctx, key, text, attachments=bool(attachments))
        async with admitted as text, self._locks.hold(key):
            if on_admitted is not None:
                on_admitted()
            await self.admission.check_budgets(ctx)
            await self.llm.check_available()  # known to be down: nothing stored
            said = await self.media.read(text, attachments)  # caps; voice transcribed
            tools = self.tools.definitions(ctx) if self.tools else []
            history = await self.store.load_window(key, self.settings.history.max_turns)
            overheard = await self.overheard.recent(ctx, key)
            prompt = await self._prompt(ctx, key, said, history, overheard, tools)
            turn = PendingTurn(self.store, self.budgets, ctx, key, said.stored, overheard)
            bill = Bill()  # every model call's tokens, booked even when the turn fails later
            answer = Answer()
            try:
                run = self._loop.run(
                    ctx, prompt, tools, bill, answer, streaming=streaming, conversation_key=key
                )
                async for event in run:
                    yield event
                if split is not None:
                    await answer.fit(split, self.settings.limits.max_reply_messages)
                final = answer.final
                turn_id = await turn.complete(answer.messages, bill.total, final.model)
                if self.compactor is not None:  # background: never delays this reply
                    self.compactor.turn_done(ctx, key, cut=prompt.cut)
            except BaseException as exc:
                await turn.fail(exc, bill.total)
                raise
            reply = Reply(final.text, turn_id, key, bill.total, final.model, final.finish_reason)
        yield Done(reply)  # after the lock is released: a consumer may stop here

    async def _prompt(
        self,
        ctx: ChatContext,
        key: str,
        said: UserInput,
        history: list[StoredTurn],
        overheard: list[Overheard],
        tools: list[dict[str, Any]],
    ) -> Prompt:
        """Recall from what left the window, place the window (cut it if it is over) beside
        what recall brought, build the prompt. A cut moves turns out of the window: recall
        searches again, so they are found from this very request on."""
        shared = is_shared(key)
        text = said.text
        user = user_message(text, ctx.user_name or ctx.user_id, shared, said.images)
        mark = await self.store.load_window_mark(key)
        before = recall_boundary(history, mark)
        recalled = await self.memory.recall(ctx, key, said.query, before_turn_id=before)
        placement = await self._window(ctx, key, history, overheard, user, tools, mark, recalled)
        if placement.cut is not None and placement.recall_before != before:
            recalled = await self.memory.recall(
                ctx, key, said.query, before_turn_id=placement.recall_before
            )
        try:
            prompt = build_prompt(
                system_prompt=self.system_prompt(ctx),
                summary=placement.summary,
                history=placement.turns,
                overheard=overheard,
                recalled=recalled,
                text=text,
                speaker=ctx.user_name or ctx.user_id,
                shared=shared,
                tools=tools,
                counter=self.counter,
                limits=self._limits,
                images=said.images,
            )
        except ContextTooLongError:  # refused: the window stays where it was
            log.info("message too long for the model: chars=%d conv=%s", len(text), key)
            raise
        if placement.cut is not None:  # stored once the request is sure to be sent
            await self.store.save_window_mark(key, ctx.chat_key, placement.cut)
            log.debug("window cut conv=%s start=%d", key, placement.start)
        return dataclasses.replace(prompt, cut=placement.cut is not None)

    async def _window(
        self,
        ctx: ChatContext,
        key: str,
        history: list[StoredTurn],
        overheard: Sequence[Overheard],
        user: dict[str, Any],
        tools: list[dict[str, Any]],
        mark: WindowMark | None,
        recalled: Sequence[str] | None,
    ) -> Placement:
        """Where this request's history begins and the summary it shows (``cut`` is set when
        the start moved; the caller stores it once the request is built)."""
        shared = is_shared(key)

        def room(summary: str | None) -> int:
            return history_room(
                system=system_block(self.system_prompt(ctx), summary, self.counter, self._limits),
                overheard=overheard,
                user=user,
                tools=tools,
                counter=self.counter,
                limits=self._limits,
                recalled=recalled,
            )

        return window_for(
            history,
            mark,
            await self._summary(key),
            cost=lambda turns: history_cost(turns, shared, self.counter),
            room=room,
            max_turns=self._limits.max_turns,
            low_water=self._limits.low_water,
        )

    async def _summary(self, key: str) -> str | None:
        summary = await self.compactor.summary(key) if self.compactor is not None else None
        return summary.text if summary is not None else None

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
        kept = self.overheard.worth_keeping(ctx, text)
        if kept is None or not self.access.allows(ctx):
            return False
        key = self.conversation_key(ctx)
        await self.admission.arrive(key)  # in arrival order with the conversation's turns
        async with self._locks.hold(key):
            await self.overheard.record(ctx, key, kept)
        return True

    async def migrate_chat(self, old_chat_key: str, new_chat_key: str) -> int:
        """A chat changed its id (Telegram group -> supergroup): history and settings follow."""
        moved = await self.store.migrate_chat(old_chat_key, new_chat_key)
        self.prefs.moved(old_chat_key, new_chat_key)
        return moved

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
        tools = self.tools.definitions(ctx) if self.tools else []
        probe = user_message("", ctx.user_name or ctx.user_id, is_shared(key))
        mark = await self.store.load_window_mark(key)
        reserve: list[str] | None = None if not isinstance(self.memory, NoMemory) else []
        placement = await self._window(ctx, key, history, [], probe, tools, mark, reserve)
        window_tokens, budget = window_figures(
            system_prompt=self.system_prompt(ctx),
            summary=placement.summary,
            history=placement.turns,
            shared=is_shared(key),
            tools=tools,
            counter=self.counter,
            limits=self._limits,
        )
        return HistoryInfo(
            conversation_key=key,
            scope=self.scope_for(ctx),
            turns_in_context=stats.turns_in_context,
            turns_stored=stats.turns_stored,
            unanswered=stats.unanswered,
            window_tokens=window_tokens,
            budget=budget,
            undelivered=stats.undelivered,
        )
