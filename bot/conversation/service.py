"""ChatService: one user message in, one answer out, with the history kept straight.

Per message: admission (``admission``: access, rate, one in flight, budgets) -> the prompt
(``prompt_sources`` over ``bot.prompt``: system prompt, summary, the history window,
overheard chatter, recalled memories, the user's message) -> the model, with tools
(``tool_loop``; streamed through ``stream_buffer``) -> the turn is stored and its tokens booked
(``billing``). Outside a turn (resets, clears, ``/history``'s figures): ``chat_ops``.
Messages of one conversation run strictly in arrival order; different conversations run
concurrently. If the model fails for good, the user's message stays stored as *unanswered* and the
error (with its chat-safe text) reaches the adapter.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Protocol

from bot.config import Settings
from bot.context import ChatContext
from bot.conversation.admission import Admission, LLMSlots
from bot.conversation.ambient import Ambient
from bot.conversation.ambient_classifier import classifier_for
from bot.conversation.billing import Bill, Meter
from bot.conversation.bursts import (
    Bursts,
    MessageFolded,
    MoreMessages,
    burst_query,
    burst_turn,
    waited_text,
)
from bot.conversation.chat_ops import ChatOps, ChatOpsStore
from bot.conversation.directory_notes import DirectoryNotes
from bot.conversation.edits import EditOutcome, Edits
from bot.conversation.events import ChatEvent, Done, HistoryInfo, Reply, ToolFinished, ToolStarted
from bot.conversation.knowledge import Knowledge, KnowledgeStore
from bot.conversation.locks import KeyedLocks
from bot.conversation.media_input import MediaInput
from bot.conversation.overheard import Overhearing
from bot.conversation.pending_turn import PendingTurn
from bot.conversation.preferences import Preferences
from bot.conversation.presets import ChatPresets
from bot.conversation.prompt_sources import PromptBuilder
from bot.conversation.queues import Queues
from bot.conversation.reply_cap import SplitReply
from bot.conversation.tool_loop import Answer, ToolLoop
from bot.conversation.tool_runner import ToolRunner
from bot.conversation.turn_reads import read_for_turn
from bot.guardrails.admins import AdminPolicy
from bot.llm.client import LLMClient, TextDelta
from bot.llm.tokens import TokenCounter, get_counter
from bot.memory.compaction import Compactor
from bot.memory.provider import MemoryProvider, NoMemory
from bot.metrics import Metrics, turn_outcome
from bot.platform.media import Attachments
from bot.prompt.safety import stored_recall
from bot.storage.audit import AuditTrail
from bot.storage.chat_settings import ChatSettingsStore
from bot.storage.coordination import SharedLimits
from bot.storage.overheard import OverheardStore
from bot.storage.prompt_windows import PromptWindows
from bot.text import clean_text
from bot.values import Overheard

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


class Store(
    ChatOpsStore,
    OverheardStore,
    ChatSettingsStore,
    PromptWindows,
    AuditTrail,
    KnowledgeStore,
    Protocol,
):
    """What the service needs: history, overheard messages, per-chat preferences (changes
    audited), where each prompt window begins, the chat directory (chats' titles), and the
    knowledge bases' documents and bindings."""


class ChatService(ChatOps):
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
        metrics: Metrics | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics  # turns by outcome, queue waits (bot.metrics)
        self.store: Store = store  # more than ChatOps asks of it (chat_ops.py)
        self.llm = llm
        self.memory: MemoryProvider = memory or NoMemory()
        self.tools = tools
        self.counter = counter or get_counter(llm.model)
        self.compactor = compactor  # memory.summarize: a summary in every prompt
        self.admins = admins or AdminPolicy(settings)  # who is an admin: bot.guardrails.admins
        self.presets = ChatPresets(settings)  # config chats: under what an admin set
        self.admission = Admission(
            settings, store, self.admins, shared=shared_limits, presets=self.presets
        )
        self.access = self.admission.access
        self.budgets = self.admission.budgets
        self._locks = KeyedLocks()
        super().__init__(Preferences(store, settings.chat), self.presets, store)  # chat_setup.py
        self.directory = DirectoryNotes(store)  # chats' titles for the admin dashboard
        self.knowledge = Knowledge(settings, store, self.presets, self.admins, self.counter)
        catchup = settings.catchup  # /catchup reads chatter the prompts no longer show
        self.overheard = Overhearing(
            store,
            settings.history,
            self.admission.max_input_chars,
            retain=catchup.max_messages if catchup.enabled else 0,
        )
        self.ambient_mode = Ambient(  # unaddressed messages clearly meant for the bot
            settings, self.presets, self.prefs, store, self.access, self.budgets,
            classifier=classifier_for(settings.ambient, llm, store, self.budgets), metrics=metrics,
            shared=shared_limits,
        )  # fmt: skip
        self.edits = Edits(store, self.overheard, self.admission, self._locks)
        self.media = MediaInput(settings.llm, llm, self.admission.message_text)
        chat = settings.chat
        self.bursts = Bursts(  # a person's quick messages answered as one turn
            chat.burst_window, chat.burst_max_messages, self.admission.max_input_chars
        )
        self.prompts = PromptBuilder(  # recall, summary, window placement: prompt_sources
            settings, store, self.memory, self.counter, compactor, self.system_prompt
        )
        limits = settings.limits
        self.queues = Queues(self._locks, LLMSlots(limits), metrics)  # waits timed
        self._loop = ToolLoop(
            llm,
            tools,
            Meter(self.counter),
            slot=self.queues.llm_slot,
            max_rounds=settings.tools.max_rounds if max_tool_rounds is None else max_tool_rounds,
            max_output=min(settings.llm.max_output_tokens, limits.max_output_tokens or 10**9),
            max_reply=limits.max_reply_chars,
        )

    async def start(self) -> None:
        """Load per-chat preferences (a conversation key is known without awaiting) and the
        bot's spending today (a burst of first turns does not read it once each)."""
        await self.prefs.load()
        if self.settings.limits.daily_tokens_total is not None:
            await self.budgets.total_today()

    # -- chatting ------------------------------------------------------------------------------

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
    ) -> Reply:
        """Answer ``text`` without streaming.

        ``split``: how the adapter cuts a reply into messages; the answer is kept within
        ``limits.max_reply_messages`` of them (and always within ``limits.max_reply_chars``).
        ``on_admitted`` runs once the message is admitted (budgets too) and its model request
        has started: adapters start typing there (a refusal costs no platform call).
        ``attachments``: the message's images and voice notes, as bytes (``bot.platform.media``),
        or a source that downloads them once the message is admitted; the text may then be empty
        (``bot.conversation.media_input`` says what the model sees).
        ``burst``: the sender's quick messages may be answered as one turn
        (``chat.burst_window``); the later ones then raise :class:`MessageFolded`, a quiet
        refusal. False for a caller that needs an answer to each request (an HTTP API).
        ``more``: later messages of the sender the adapter holds back (Telegram webhook
        mode's inbox), offered to the burst while it gathers.
        """
        turn = self._turn(
            ctx, text, attachments, streaming=False, split=split, on_admitted=on_admitted,
            burst=burst, more=more,
        )  # fmt: skip
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
        burst: bool = True,
        more: MoreMessages | None = None,
    ) -> AsyncGenerator[ChatEvent, None]:
        """Answer ``text``, yielding text deltas and tool events, then :class:`Done`.

        Iterate it to the end, or wrap it in ``contextlib.aclosing`` when you may stop early:
        the conversation stays locked until the generator finishes or is closed. An answer
        past ``limits.max_reply_chars`` ends with a delta carrying the note; the Done reply's
        text (cut further to fit ``split``'s messages, see :meth:`chat`) is what is stored.
        """
        return self._turn(
            ctx, text, attachments, streaming=True, split=split, on_admitted=on_admitted,
            burst=burst, more=more,
        )  # fmt: skip

    async def _turn(
        self,
        ctx: ChatContext,
        text: str,
        attachments: Attachments,
        *,
        streaming: bool,
        split: SplitReply | None,
        on_admitted: Callable[[], object] | None,
        burst: bool,
        more: MoreMessages | None,
    ) -> AsyncGenerator[ChatEvent, None]:
        key = self.conversation_key(ctx)  # no await before admission: arrival order holds
        self.ambient_mode.addressed(ctx, text)  # "@bot stop": ambient mode cools down
        answer = self._answer(
            ctx, key, text, attachments, streaming=streaming, split=split, on_admitted=on_admitted,
            alone=bool(attachments) or not burst, more=more,
        )  # fmt: skip
        done = False
        try:
            async with contextlib.aclosing(answer) as events:  # closed: the lock is let go
                async for event in events:
                    if isinstance(event, Done):
                        done = True
                        self._count_turn(ctx, None)
                        self.ambient_mode.answered(ctx)  # its follow-ups may come unaddressed
                    yield event
        except BaseException as exc:
            if not done:  # a consumer stopping after Done changes nothing
                self._count_turn(ctx, exc)
            raise

    async def _answer(
        self,
        ctx: ChatContext,
        key: str,
        text: str,
        attachments: Attachments,
        *,
        streaming: bool,
        split: SplitReply | None,
        on_admitted: Callable[[], object] | None,
        alone: bool,
        more: MoreMessages | None,
    ) -> AsyncGenerator[ChatEvent, None]:
        # access, rate, text, one in flight: checked before anything is stored; the lock is
        # entered right after, so messages queue for it in the order they arrived
        joins = self.bursts.joins(key, ctx.user_id, alone=alone)  # then it needs no place
        async with (
            self.edits.waiting(key, ctx.message_id) as waiting,  # an edit may replace it
            self.admission.admitted(
                ctx, key, text, attachments=bool(attachments), joins_burst=joins
            ) as admitted,
            self.bursts.in_line(  # a burst may take it
                key, ctx, admitted.text, alone, waiting, admitted.place
            ) as arrival,
            self.queues.conversation(key),
        ):
            if arrival.taken:  # an earlier message of its burst answered it
                raise MessageFolded(f"answered with an earlier message conv={key}")
            text = arrival.text = self.edits.start(key, ctx.message_id, waiting, admitted.text)
            rows = await read_for_turn(  # the model up, budgets, window, chatter, mark
                ctx, key, llm=self.llm, admission=self.admission, store=self.store,
                max_turns=self.settings.history.max_turns, overheard_since=self.overheard.since(),
            )  # fmt: skip
            if on_admitted is not None:  # one loop step on: after the model request's task
                asyncio.get_running_loop().call_soon(on_admitted)
            burst = await self.bursts.gather(key, ctx.user_id, arrival, more)
            try:  # until the turn is on its way to the store, a failure frees the others
                ctx, text, earlier = burst_turn(ctx, key, burst, waited_text(self.edits, key))
                said = await self.media.read(text, attachments)  # caps; voice transcribed
                if earlier:  # recall and knowledge look for what the whole burst asks
                    said = dataclasses.replace(said, query=burst_query(earlier, said.query))
                knowledge = await self.knowledge.turn(ctx, self.tools, rows.window)
                runner = knowledge.runner
                tools = runner.definitions(ctx) if runner else []
                passages = await knowledge.before_call(said.query)
                history, overheard = rows.window, self.overheard.latest(rows.overheard)
                shown = overheard + [  # the burst's earlier messages, where they will be stored
                    Overheard(0, ctx.user_id, ctx.user_name, m.text, m.created_at) for m in earlier
                ]
                prompt = await self.prompts.build(
                    ctx, key, said, history, shown, tools, rows.mark, passages
                )
            except BaseException:
                self.bursts.untake(burst)  # each answered on its own, in turn
                raise
            turn = PendingTurn(
                self.store, self.budgets, ctx, key, said.stored, overheard, burst=tuple(earlier)
            )
            turn.when_stored(lambda stored: self.bursts.settle(burst, stored))  # with it
            bill = Bill()  # every model call's tokens, booked even when the turn fails later
            answer = Answer()
            try:
                model = self.presets.model(ctx)
                run = self._loop.run(
                    ctx, prompt, tools, bill, answer, streaming=streaming, conversation_key=key,
                    model=model, runner=runner,
                )  # fmt: skip
                async with contextlib.aclosing(run) as events:  # closed now, if we are
                    async for event in events:
                        yield event
                note = knowledge.cite(answer)  # the sources line, shown and stored
                if note and streaming:
                    yield TextDelta(note)
                if split is not None:
                    await answer.fit(split, self.settings.limits.max_reply_messages)
                final = answer.final
                kept = prompt.recall_to_keep  # back in later requests where it was sent
                stored = [stored_recall(kept), *answer.messages] if kept else answer.messages
                turn_id = await self.directory.beside(  # listed when the answer is stored
                    ctx, turn.complete(stored, bill.total, final.model)
                )
                if self.compactor is not None:  # background: never delays this reply
                    self.compactor.turn_done(ctx, key, cut=prompt.cut)
            except BaseException as exc:
                await turn.fail(exc, bill.total)
                self.directory.note_later(ctx)  # the error reaches the user first
                raise
            reply = Reply(final.text, turn_id, key, bill.total, final.model, final.finish_reason,
                          rendered=answer.rendered)  # fmt: skip
        yield Done(reply)  # after the lock is released: a consumer may stop here

    def _count_turn(self, ctx: ChatContext, exc: BaseException | None) -> None:
        if self.metrics is not None:
            self.metrics.turn(ctx.platform, turn_outcome(exc))

    # -- group chatter ---------------------------------------------------------------------------

    async def ambient(self, ctx: ChatContext, text: str, *, names: Sequence[str] = ()) -> bool:
        """Whether to answer an unaddressed group message as if addressed (ambient mode;
        ``names``: the bot's on its platform); False: overhear it as usual
        (:mod:`bot.conversation.ambient`)."""
        return await self.ambient_mode.decide(ctx, text, names)

    async def overhear(self, ctx: ChatContext, text: str, *, follow_up: bool = True) -> bool:
        """Keep an unaddressed group message as context for the next answer (bounded); False
        when nothing was kept (private chat, feature off, empty or huge text). It joins its
        sender's burst being gathered, unless ``follow_up`` is False: it @mentions someone
        else, so it is theirs."""
        key = self.conversation_key(ctx)
        joins = follow_up and self.bursts.joins(key, ctx.user_id, alone=False)
        if joins and self.access.allows(ctx):
            said = clean_text(text.strip())  # a follow-up of a burst being gathered: its turn's
            if said and await self.bursts.join(key, ctx, said):
                return True
        kept = self.overheard.worth_keeping(ctx, text)
        if kept is None or not self.access.allows(ctx):
            return False
        await self.admission.arrive(key)  # in arrival order with the conversation's turns
        async with self._locks.hold(key):
            await self.overheard.record(ctx, key, kept)
        return True

    async def edited(self, ctx: ChatContext, text: str, *, context: bool = True) -> EditOutcome:
        """Message ``ctx.message_id`` now reads ``text``: it replaces the message while that
        waits, else it is context (unless ``context`` is False), never answered
        (:mod:`bot.conversation.edits`)."""
        key = self.conversation_key(ctx)
        return await self.edits.apply(ctx, key, text, self.access.allows, context=context)
