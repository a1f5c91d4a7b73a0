"""One request's prompt, read from the store: the I/O around the pure ``prompt`` and ``window``.

For a message it loads the window's start (:mod:`bot.storage.prompt_windows`) and the summary
(``memory.summarize``), recalls memories from the turns that left the window, places the window
(cut in steps, :mod:`bot.prompt.window`) beside what recall brought, and builds the
prompt (:mod:`bot.prompt.assembly`). A cut is stored only once the request is sure to be
sent; a message too long for the model leaves the window where it was. ``/history`` reads the
same placement, so the figures it shows are those of the next request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from bot.config import Settings
from bot.context import ChatContext
from bot.conversation.media_input import UserInput
from bot.errors import ContextTooLongError
from bot.llm.tokens import TokenCounter
from bot.memory.compaction import Compactor
from bot.memory.provider import MemoryProvider, NoMemory
from bot.prompt.assembly import (
    PricedHistory,
    Prompt,
    PromptLimits,
    TurnTokens,
    build_prompt,
    history_room,
    is_shared,
    system_block,
    user_message,
    window_figures,
)
from bot.prompt.safety import held_lines
from bot.prompt.window import Placement, recall_boundary, window_for
from bot.storage.prompt_windows import PromptWindows
from bot.storage.turns import Turns
from bot.values import Overheard, StoredTurn, WindowMark

__all__ = ["PromptBuilder", "PromptSources"]

log = logging.getLogger(__name__)


class PromptSources(Turns, PromptWindows, Protocol):
    """What a prompt is read from: the stored turns and where each window begins."""


class PromptBuilder:
    def __init__(
        self,
        settings: Settings,
        store: PromptSources,
        memory: MemoryProvider,
        counter: TokenCounter,
        compactor: Compactor | None,
        system_prompt: Callable[[ChatContext], str],
    ) -> None:
        self.settings = settings
        self.store = store
        self.memory = memory
        self.counter = counter
        self.compactor = compactor
        self.system_prompt = system_prompt  # the chat's persona: ChatService.system_prompt
        self.limits = PromptLimits.of(settings)
        self.turn_tokens = TurnTokens(counter)  # a window's turns counted once, not per message

    async def counter_ready(self) -> None:
        """The first count loads the encoding (0.5-0.7 s): in a thread, never on the loop."""
        if not self.counter.loaded:
            await asyncio.to_thread(self.counter.load)

    async def build(
        self,
        ctx: ChatContext,
        key: str,
        said: UserInput,
        history: list[StoredTurn],
        overheard: list[Overheard],
        tools: list[dict[str, Any]],
        mark: WindowMark | None,
        passages: Sequence[dict[str, Any]] = (),
    ) -> Prompt:
        """Recall from what left the window, place the window (cut it if it is over) beside
        what recall brought, build the prompt. A cut moves turns out of the window: recall
        searches again, so they are found from this very request on."""
        await self.counter_ready()
        shared = is_shared(key)
        text = said.text
        user = user_message(text, ctx.user_name or ctx.user_id, shared, said.images)
        before = recall_boundary(history, mark)
        recalling = not isinstance(self.memory, NoMemory)
        window = [t for t in history if recalling and before is not None and t.turn_id >= before]
        recalled = await self.memory.recall(
            ctx, key, said.query, before_turn_id=before, held=_held(window)
        )
        placement, priced = await self._window(
            ctx, key, history, overheard, user, tools, mark, recalled.lines, passages
        )
        if placement.cut is not None and placement.recall_before != before:
            recalled = await self.memory.recall(
                ctx,
                key,
                said.query,
                before_turn_id=placement.recall_before,
                held=_held(placement.turns),
            )
        try:
            prompt = build_prompt(
                system_prompt=self.system_prompt(ctx),
                summary=placement.summary,
                history=placement.turns,
                overheard=overheard,
                recalled=recalled.kept,
                own_recalled=recalled.own,
                text=text,
                speaker=ctx.user_name or ctx.user_id,
                shared=shared,
                tools=tools,
                counter=self.counter,
                limits=self.limits,
                images=said.images,
                priced=priced,
                passages=passages,
            )
        except ContextTooLongError:  # refused: the window stays where it was
            log.info("message too long for the model: chars=%d conv=%s", len(text), key)
            raise
        if placement.cut is not None:  # stored once the request is sure to be sent
            await self.store.save_window_mark(key, ctx.chat_key, placement.cut)
            log.debug("window cut conv=%s start=%d", key, placement.start)
        return dataclasses.replace(prompt, cut=placement.cut is not None)

    async def figures(
        self, ctx: ChatContext, key: str, tools: list[dict[str, Any]]
    ) -> tuple[int, int]:
        """``/history``'s window tokens and budget: the window the next request would send,
        placed (never cut: nothing is stored) as for an empty message."""
        await self.counter_ready()
        history = await self.store.load_window(key, self.settings.history.max_turns)
        probe = user_message("", ctx.user_name or ctx.user_id, is_shared(key))
        mark = await self.store.load_window_mark(key)
        reserve: list[str] | None = None if not isinstance(self.memory, NoMemory) else []
        placement, _ = await self._window(ctx, key, history, [], probe, tools, mark, reserve)
        return window_figures(
            system_prompt=self.system_prompt(ctx),
            summary=placement.summary,
            history=placement.turns,
            shared=is_shared(key),
            tools=tools,
            counter=self.counter,
            limits=self.limits,
        )

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
        passages: Sequence[dict[str, Any]] = (),
    ) -> tuple[Placement, PricedHistory | None]:
        """Where this request's history begins and the summary it shows (``cut`` is set when
        the start moved; the caller stores it once the request is built), and the last history
        priced on the way (the prompt's when the window was not cut)."""
        shared = is_shared(key)
        last: list[PricedHistory] = []

        def cost(turns: Sequence[StoredTurn]) -> int:
            last[:] = [self.turn_tokens.price(turns, shared)]
            return self.turn_tokens.cost(last[0])

        def room(summary: str | None) -> int:
            return history_room(
                system=system_block(self.system_prompt(ctx), summary, self.counter, self.limits),
                overheard=overheard,
                user=user,
                tools=tools,
                counter=self.counter,
                limits=self.limits,
                recalled=recalled,
                passages=passages,
            )

        placement = window_for(
            history,
            mark,
            await self._summary(key),
            cost=cost,
            room=room,
            max_turns=self.limits.max_turns,
            low_water=self.limits.low_water,
        )
        return placement, last[0] if last else None

    async def _summary(self, key: str) -> str | None:
        summary = await self.compactor.summary(key) if self.compactor is not None else None
        return summary.text if summary is not None else None


def _held(turns: Sequence[StoredTurn]) -> set[str]:
    """The recalled lines the window's turns carry already (stored with their answers)."""
    return {line for turn in turns for line in held_lines(turn.messages)}
