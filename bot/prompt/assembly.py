"""Prompt assembly: what the model is sent for one message, as pure functions over plain data.

The order, oldest first. The first three are the **stable part**: the next message's request
starts with their exact bytes (tool definitions come before them on the wire, in a fixed order),
so a provider's prompt cache reuses them; the window moves only at a cut
(``bot.prompt.window``). The rest is the **volatile tail**, different every turn:

1. the **system block**: the system prompt (global or the chat's override), then the
   conversation's summary as pinned at the last cut, quoted (``bot.prompt.safety``)
   and cut if it ran away;
2. the stored **history** from the window's start, in a shared conversation (chat or thread
   scope) with the speaker's tag on every line of every user message;
3. **overheard** group messages since the last turn, tagged the same way (stored with the turn,
   they come back in the same form and place in the next request's history);
4. the **recalled** memories, user-role messages of quoted items capped at ``memory.max_tokens``
   (most relevant first; a long item never hides shorter ones after it): first what everyone in
   the conversation may read, which is stored with the turn (:data:`Prompt.kept_recall`) and
   so comes back at the same place, before the turn's message, in every later request's
   history (the stable part grows by it instead of a new block replacing it every turn), then
   what only the asker may read, never stored;
5. **passages** from the chat's knowledge bases (``bot.prompt.passages``), quoted and
   numbered for citing, never stored with the turn;
6. the user's **message**, tagged in a shared conversation.

The token budget is the context window less the reply reserve and the tool definitions, capped at
``history.max_tokens`` beyond the fixed parts if configured; :func:`fit` trims the prompt to it
(``bot.llm.trim.trim_history``: whole turns go, oldest first; the system block always stays).
Nothing here awaits or stores: ``bot.conversation.prompt_sources`` fetches the parts and hands them
in.
"""

from __future__ import annotations

import json
import operator
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.config import Settings
from bot.errors import ContextTooLongError
from bot.llm.tokens import TokenCounter
from bot.llm.trim import trim_history
from bot.prompt.recall_budget import recall_cap, recalled_block, recalled_blocks
from bot.prompt.safety import STORED_RECALL, quoted_summary, recalled_message, with_speaker
from bot.values import Overheard, StoredTurn

__all__ = [
    "PricedHistory",
    "Prompt",
    "PromptLimits",
    "TurnTokens",
    "build_prompt",
    "fit",
    "history_cost",
    "history_messages",
    "history_room",
    "is_shared",
    "recalled_block",
    "system_block",
    "token_budget",
    "tools_cost",
    "user_message",
    "window_figures",
]

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class PromptLimits:
    """The sizes a prompt is built to, in tokens (from ``llm``, ``history`` and ``memory``)."""

    context_window: int
    reply_reserve: int  # llm.max_output_tokens
    history_cap: int | None = None  # history.max_tokens, beyond the fixed parts
    recalled_cap: int = 400  # memory.max_tokens
    summary_cap: int = 800  # a runaway summary is cut to about this
    max_turns: int = 50  # history.max_turns
    low_water: float = 0.65  # history.low_water: a cut leaves this share of both budgets

    @classmethod
    def of(cls, settings: Settings) -> PromptLimits:
        memory = settings.memory.max_tokens
        return cls(
            context_window=settings.llm.context_window,
            reply_reserve=settings.llm.max_output_tokens,
            history_cap=settings.history.max_tokens,
            recalled_cap=recall_cap(settings),
            summary_cap=2 * max(min(memory, 400), 100),
            max_turns=settings.history.max_turns,
            low_water=settings.history.low_water,
        )


@dataclass(frozen=True, slots=True)
class Prompt:
    messages: list[Message]  # everything, in order (the tool loop re-trims it if asked to)
    window: list[Message]  # ``messages`` trimmed to ``budget``: what is sent
    budget: int
    cut: bool = False  # the window's start moved for this request (bot.prompt.window)
    kept_recall: Message | None = None  # the recalled block to store with the turn

    @property
    def recall_to_keep(self) -> Message | None:
        """:attr:`kept_recall` if the request sends it (trimming may have dropped it): it is
        among the last four messages (then only the asker's own block, the knowledge passages
        and the message)."""
        kept = self.kept_recall
        return kept if kept is not None and kept in self.window[-4:] else None


def build_prompt(
    *,
    system_prompt: str,
    summary: str | None,
    history: Sequence[StoredTurn],
    overheard: Sequence[Overheard],
    recalled: Sequence[str],
    text: str,
    speaker: str,
    shared: bool,
    tools: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    limits: PromptLimits,
    images: Sequence[Mapping[str, Any]] = (),
    priced: PricedHistory | None = None,
    own_recalled: Sequence[str] = (),
    passages: Sequence[Message] = (),
) -> Prompt:
    """The prompt for ``text`` from ``speaker``, trimmed; ``ContextTooLongError`` when the
    system block and the message alone do not fit. (The recalled block is a user message, so
    a turn of its own for trimming: the last one to go before the message itself.)
    ``images``: ``image_url`` parts sent beside ``text`` (``bot.conversation.media_input``).
    ``priced``: ``history``'s tokens as :class:`TurnTokens` found them placing the window;
    a prompt that then fits is not counted again, only repaired.
    ``passages``: the knowledge block (:mod:`bot.prompt.passages`), after the recalled ones:
    volatile, never stored with the turn."""
    prefix = system_block(system_prompt, summary, counter, limits)
    kept, own = recalled_blocks(recalled, own_recalled, history, counter, limits.recalled_cap)
    user = user_message(text, speaker, shared, images)
    budget = token_budget([*prefix, *kept, *own, *passages], user, tools, counter, limits)
    fixed = [*(overheard_message(o, shared) for o in overheard), *kept, *own, *passages, user]
    messages = [*prefix, *history_messages(history, shared), *fixed]
    keep = kept[0] if kept else None
    if priced is not None and priced.turns is history:  # the parts add up exactly
        raw = priced.raw + sum(map(counter.count_message, [*prefix, *fixed]))
        if counter.scaled(raw) <= budget:  # repairing only drops: it fits all the more
            return Prompt(messages, trim_history(messages), budget, kept_recall=keep)
    return Prompt(messages, fit(messages, budget, counter), budget, kept_recall=keep)


@dataclass(frozen=True, slots=True)
class PricedHistory:
    """Stored turns and the sum of :meth:`TokenCounter.count_message` over their messages as
    a prompt holds them (:func:`history_messages`)."""

    turns: Sequence[StoredTurn]
    raw: int


class TurnTokens:
    """Each stored turn's tokens as sent, remembered by the turn object (weakly, at most
    ``limit`` of them). The window cache hands the same turns to every message of a
    conversation, so a window is counted turn by turn once, not on every message."""

    def __init__(self, counter: TokenCounter, limit: int = 4096) -> None:
        self.counter = counter
        self.limit = limit
        self._kept: dict[tuple[int, bool], tuple[weakref.ref[StoredTurn], int]] = {}

    def price(self, turns: Sequence[StoredTurn], shared: bool) -> PricedHistory:
        kept, count = self._kept, self.counter.count_message
        raw = 0
        for turn in turns:
            key = (id(turn), shared)
            found = kept.get(key)
            if found is not None and found[0]() is turn:
                raw += found[1]
                continue
            tokens = sum(map(count, history_messages((turn,), shared)))
            if len(kept) >= self.limit:
                for old in list(kept)[: self.limit // 2]:  # the oldest half goes
                    del kept[old]
            kept[key] = (weakref.ref(turn), tokens)
            raw += tokens
        return PricedHistory(turns, raw)

    def cost(self, priced: PricedHistory) -> int:
        """What :func:`history_cost` says of the same turns."""
        return self.counter.scaled(priced.raw) - self.counter.scaled(0)


def user_message(
    text: str, speaker: str, shared: bool, images: Sequence[Mapping[str, Any]] = ()
) -> Message:
    """The user's message; with ``images``, OpenAI's content parts: the text, then each
    image (the history keeps only the text, which names them)."""
    content = with_speaker(speaker, text) if shared else text
    if not images:
        return {"role": "user", "content": content}
    parts: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
    return {"role": "user", "content": [*parts, *(dict(image) for image in images)]}


def history_room(
    *,
    system: list[Message],
    overheard: Sequence[Overheard],
    user: Message,
    tools: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    limits: PromptLimits,
    recalled: Sequence[str] | None,
    passages: Sequence[Message] = (),
) -> int:
    """Tokens the history may take beside everything else in this turn's request.

    ``recalled``: the lines recall brought (their block is counted as the prompt will hold
    it), or None to reserve the block at its cap, whatever recall may bring.
    """
    tail = [*system, *(overheard_message(o, True) for o in overheard), *passages, user]
    if recalled is not None:
        tail += recalled_block(recalled, counter, limits.recalled_cap)
    room = limits.context_window - limits.reply_reserve - counter.count_messages(tail)
    if recalled is None and limits.recalled_cap > 0:  # the header, then at most the cap
        room -= message_cost([recalled_message([])], counter) + limits.recalled_cap
    if tools:
        room -= tools_cost(tools, counter)
    if limits.history_cap is not None:
        heard = [overheard_message(o, True) for o in overheard]
        room = min(room, limits.history_cap - (message_cost(heard, counter) if heard else 0))
    return room


def history_cost(turns: Sequence[StoredTurn], shared: bool, counter: TokenCounter) -> int:
    """The tokens ``turns`` add to a request, as sent (speaker tags included)."""
    return message_cost(history_messages(turns, shared), counter)


def message_cost(messages: list[Message], counter: TokenCounter) -> int:
    return counter.count_messages(messages) - counter.count_messages([])


def window_figures(
    *,
    system_prompt: str,
    summary: str | None,
    history: Sequence[StoredTurn],
    shared: bool,
    tools: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    limits: PromptLimits,
) -> tuple[int, int]:
    """For ``/history``: the tokens of the window the next (empty) message would be sent with,
    system block included, and the budget it is trimmed to."""
    prefix = system_block(system_prompt, summary, counter, limits)
    probe = {"role": "user", "content": ""}
    budget = token_budget(prefix, probe, tools, counter, limits)
    messages = [*prefix, *history_messages(history, shared), probe]
    try:
        window = fit(messages, budget, counter)
    except ContextTooLongError:
        window = messages[: len(prefix)]
    return counter.count_messages(window[:-1]), budget


def system_block(
    system_prompt: str, summary: str | None, counter: TokenCounter, limits: PromptLimits
) -> list[Message]:
    """The system prompt, then the conversation's summary (quoted)."""
    block: list[Message] = [{"role": "system", "content": system_prompt}]
    if summary is not None:
        limit = limits.summary_cap
        if counter.count_text(summary) > limit:
            summary = " ".join(summary.split()[: limit // 2]) + " …"
        block.append(quoted_summary(summary))
    return block


def token_budget(
    fixed: list[Message],
    user_message: Message,
    tools: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    limits: PromptLimits,
) -> int:
    """Context window - reply reserve - tool definitions; history capped if configured."""
    budget = limits.context_window - limits.reply_reserve
    if tools:
        budget -= tools_cost(tools, counter)
    if limits.history_cap is not None:
        budget = min(budget, counter.count_messages([*fixed, user_message]) + limits.history_cap)
    return budget


_TOOLS_KEPT = 64  # tool lists whose cost is remembered (one per set of tools a chat is offered)
_tools_costs: dict[tuple[int, ...], tuple[Sequence[Mapping[str, Any]], TokenCounter, int]] = {}


def tools_cost(tools: Sequence[Mapping[str, Any]], counter: TokenCounter) -> int:
    """The tokens of the tool definitions, as sent. Declared tools hand out the same
    definition objects every turn (``bot.plugins.declare``): their list is serialised and
    counted once, not on every message (a few kB of JSON for the default tools)."""
    key = (id(counter), *map(id, tools))
    kept = _tools_costs.get(key)  # held below: these ids cannot be reused while kept
    if kept is not None and kept[1] is counter and all(map(operator.is_, kept[0], tools)):
        return kept[2]
    tokens = counter.count_text(json.dumps(list(tools)))
    if len(_tools_costs) >= _TOOLS_KEPT:
        _tools_costs.clear()
    _tools_costs[key] = (tuple(tools), counter, tokens)
    return tokens


def fit(messages: list[Message], budget: int, counter: TokenCounter) -> list[Message]:
    """``messages`` trimmed to ``budget`` tokens; ``ContextTooLongError`` if they cannot be."""
    return trim_history(messages, max_tokens=budget, count_tokens=counter.count_messages)


def is_shared(conversation_key: str) -> bool:
    """Several people write into chat- and thread-scoped conversations."""
    return ":u:" not in conversation_key


def history_messages(turns: Sequence[StoredTurn], shared: bool) -> list[Message]:
    """Each turn as sent: the recalled block its request carried (stored with its answer,
    sent back where it was, before the turn's message), the user's message (tagged in a
    shared conversation), then the answer."""
    messages: list[Message] = []
    for turn in turns:
        first = len(messages)  # where this turn begins: a kept block goes there
        for message in turn.messages:
            role = message["role"]
            if role == STORED_RECALL:
                messages.insert(first, {"role": "user", "content": message["content"]})
                first += 1
            elif shared and role == "user":
                content = with_speaker(turn.user_name or turn.user_id, str(message["content"]))
                messages.append({"role": "user", "content": content})
            else:
                messages.append(dict(message))
    return messages


def overheard_message(message: Overheard, shared: bool) -> Message:
    speaker = message.user_name or message.user_id
    return {
        "role": "user",
        "content": with_speaker(speaker, message.text) if shared else message.text,
    }
