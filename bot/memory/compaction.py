"""Compaction: turns that left the context window become a rolling summary (and facts).

Trimming keeps requests within the model's window but forgets (seed 001). When enough turns
have fallen out of a conversation's window, the model summarises them together with the
previous summary; the summary goes back into every prompt as its own system message, and
durable facts it names are stored as memories. It runs in the background after a reply (never
delaying or failing it), at most once per ``memory.summary_every`` turns, and its state lives in
the storage (:class:`bot.storage.summaries.Summaries`), so it survives restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from bot.config import Settings
from bot.context import ChatContext, display_name
from bot.llm.client import LLMClient
from bot.prompt.safety import one_line_json
from bot.storage.prompt_windows import PromptWindows
from bot.storage.resets import Resets
from bot.storage.summaries import Summaries
from bot.storage.turns import TurnArchive, Turns
from bot.storage.usage import UsageLedger
from bot.values import BOT_USER, StoredTurn, Summary

if TYPE_CHECKING:
    from bot.memory.store import MemoryStore

__all__ = ["CompactionStore", "Compactor", "Summary"]

log = logging.getLogger(__name__)

MAX_TURNS_PER_PASS = 60  # one summarising request stays small whatever the backlog
MAX_PASS_CHARS = 24_000  # ... and within a small model's window (about 6k tokens)
_PROMPT = (
    "You maintain the long-term memory of a chat assistant. Below are the previous summary of "
    "an earlier part of a conversation and the turns that followed it. Write an updated "
    "summary (at most {words} words, third person, keep names, decisions, open questions and "
    "anything the user asked to be remembered), and list durable facts about the participants "
    '(one sentence each; none if there are none). Answer with JSON only: {{"summary": "...", '
    '"facts": ["..."]}}'
)


class CompactionStore(Summaries, PromptWindows, Resets, Turns, TurnArchive, UsageLedger, Protocol):
    """What compaction reads and writes: summaries, where the prompt begins, reset points, the
    window, the ledger."""


class Compactor:
    def __init__(
        self,
        settings: Settings,
        store: CompactionStore,
        llm: LLMClient,
        memories: MemoryStore | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.llm = llm
        self.memories = memories
        self._tasks: dict[str, asyncio.Task[None]] = {}

    # -- reading (the service asks for the summary with every request) ------------------------

    async def summary(self, conversation_key: str) -> Summary | None:
        found = await self.store.load_summary(conversation_key)
        return found if found is not None and found.text else None

    # -- after each reply ---------------------------------------------------------------------

    def turn_done(self, ctx: ChatContext, conversation_key: str, *, cut: bool = False) -> None:
        """Count the turn and, when due, compact in the background (one pass per conversation).

        ``cut``: the prompt's window was just cut, so turns have left it: compact now, and the
        summary is ready to be pinned at the next cut (the prompt shows a new one only then)."""
        running = self._tasks.get(conversation_key)
        if running is not None and not running.done():
            return
        task = asyncio.ensure_future(self._after_turn(ctx, conversation_key, cut))
        self._tasks[conversation_key] = task
        task.add_done_callback(lambda _: self._tasks.pop(conversation_key, None))

    async def _after_turn(self, ctx: ChatContext, key: str, cut: bool) -> None:
        try:
            since = await self.store.count_summary_turn(key, ctx.chat_key)
            if cut or since >= self.settings.memory.summary_every:
                await self.compact(ctx, key)
        except Exception:  # never the user's problem: the reply is already out
            log.exception("compaction failed conv=%s; next try in some turns", key)
            with contextlib.suppress(Exception):  # back off: not one failing call per turn
                await self.store.restart_summary_count(key)

    async def compact(self, ctx: ChatContext, key: str) -> bool:
        """Summarise the turns between the last summary and the window's start (where the
        prompt last began: bot.prompt.window). False: nothing to do."""
        previous = await self.store.load_summary(key)  # its text is empty until a first pass
        # Never before the summary's end (even an empty one) nor before a /reset: the user
        # asked to start over, and a summary must not bring the old turns back.
        reset = await self.store.reset_point(key)
        after = max(previous.through_turn_id if previous is not None else 0, reset)
        mark = await self.store.load_window_mark(key)
        if mark is not None:
            start = mark.start_turn_id
        else:  # never cut: what precedes the turns a request would load
            window = await self.store.load_window(key, self.settings.history.max_turns)
            if not window:
                return False
            start = window[0].turn_id
        dropped = _within_budget(await self._turns_between(key, after, start))
        if not dropped:
            return False
        text, facts = await self._summarise(ctx, previous.text if previous else "", dropped)
        text = _truncate_words(text, self.settings.memory.summary_max_words * 3 // 2)
        if await self.store.reset_point(key) != reset or not await self.store.turn_exists(
            dropped[-1].turn_id
        ):
            log.info("compaction result dropped conv=%s: reset or cleared meanwhile", key)
            return False
        await self.store.save_summary(key, ctx.chat_key, text, dropped[-1].turn_id)
        if self.memories is not None and self.settings.memory.extract_facts:
            known = {_norm(m.text) for m in await self.memories.list(ctx.chat_key, limit=1000)}
            for fact in facts:
                if _norm(fact) in known:
                    continue
                known.add(_norm(fact))
                try:
                    await self.memories.add(  # recalled in this conversation (memory_scope)
                        ctx,
                        fact[:1000],
                        conversation_key=key,
                        chat_wide=not ctx.is_private and ":u:" not in key,
                        created_by="summary",
                    )
                except ValueError as exc:
                    log.info("fact skipped conv=%s: %s", key, exc)
        log.info(
            "compacted conv=%s turns=%d through=%d facts=%d",
            key,
            len(dropped),
            dropped[-1].turn_id,
            len(facts),
        )
        return True

    async def aclose(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- internals ------------------------------------------------------------------------------

    async def _turns_between(self, key: str, after: int, before: int) -> list[StoredTurn]:
        """The turns to summarise: each user message and the assistant's words (no tools)."""
        turns = await self.store.turns_between(key, after, before)
        return [
            dataclasses.replace(
                turn,
                messages=(
                    turn.messages[0],
                    *(m for m in turn.messages[1:] if m.get("role") == "assistant"),
                ),
            )
            for turn in turns
        ]

    async def _summarise(
        self, ctx: ChatContext, previous: str, turns: Sequence[StoredTurn]
    ) -> tuple[str, list[str]]:
        lines = []  # one JSON line per message: a newline in one cannot forge another speaker
        for turn in turns:
            for message in turn.messages:
                content = str(message.get("content") or "").strip()
                if not content:
                    continue
                who = (turn.user_name or turn.user_id) if message["role"] == "user" else "assistant"
                lines.append(one_line_json({"speaker": display_name(who), "text": content}))
        words = self.settings.memory.summary_max_words
        request = [
            {"role": "system", "content": _PROMPT.format(words=words)},
            {
                "role": "user",
                "content": f"Previous summary:\n{one_line_json(previous or '(none)')}\n\n"
                "Turns (one JSON object per message):\n" + "\n".join(lines),
            },
        ]
        completion = await self.llm.complete(request, max_tokens=max(64, words * 3))
        if completion.usage is not None:  # the chat's bill and the bot's, no user's
            await self.store.book_usage(ctx.chat_key, BOT_USER, "(summaries)", completion.usage)
        return _parse(completion.text)


def _within_budget(turns: list[StoredTurn]) -> list[StoredTurn]:
    """The oldest turns that fit one summarising request (at least one)."""
    kept: list[StoredTurn] = []
    size = 0
    for turn in turns[:MAX_TURNS_PER_PASS]:
        size += sum(len(str(m.get("content") or "")) for m in turn.messages)
        if kept and size > MAX_PASS_CHARS:
            break
        kept.append(turn)
    return kept


def _truncate_words(text: str, words: int) -> str:
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + " …"


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


def _parse(text: str) -> tuple[str, list[str]]:
    """The model's JSON, or, when it wrote prose instead, the prose as the summary."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    start, end = body.find("{"), body.rfind("}")
    if start != -1 and end > start:
        try:
            data = json.loads(body[start : end + 1])
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("summary"), str):
            facts = [str(f).strip() for f in data.get("facts") or [] if str(f).strip()]
            return data["summary"].strip(), facts[:20]
    return body, []
