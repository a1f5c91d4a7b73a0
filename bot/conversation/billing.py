"""A turn's bill: every model call's tokens, booked even when the turn fails later.

A call is put on the bill as soon as it is done (a reader that stops later must not lose it).
A server that reports no usage, and a stream the bot hung up on at its reply cap, are billed
by our own count, so budgets still hold (with no cached tokens: we cannot know them). The first
call of a turn calibrates an estimating token counter against the provider's figure, when the
primary answered it (a fallback counts with another tokenizer, and may have been sent a prompt
re-trimmed to its own window).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from bot.conversation.reply_cap import REPLY_LIMIT, Cut
from bot.llm.client import Completion
from bot.llm.tokens import TokenCounter
from bot.values import Usage

log = logging.getLogger(__name__)


class Bill:
    """The tokens of one turn's model calls so far."""

    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total = Usage()

    def add(self, usage: Usage) -> None:
        self.total = Usage(
            self.total.prompt_tokens + usage.prompt_tokens,
            self.total.completion_tokens + usage.completion_tokens,
            self.total.cached_tokens + usage.cached_tokens,
        )


class Meter:
    """Puts model calls on a :class:`Bill`, counting what the provider does not report."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._warned_no_usage = False

    def paid(
        self, transcript: list[dict[str, Any]], completion: Completion, bill: Bill, *, first: bool
    ) -> Completion:
        """``completion`` billed (with our estimate as its usage when the server gave none)."""
        usage = completion.usage
        if usage is None:  # a server that reports none: budgets still count
            if not self._warned_no_usage:
                self._warned_no_usage = True
                log.warning("the LLM server reports no token usage; budgets use local estimates")
            written = completion.text + "".join(c.name + c.arguments for c in completion.tool_calls)
            usage = Usage(self.counter.count_messages(transcript), self.counter.count_text(written))
            completion = replace(completion, usage=usage)
        elif (
            first
            and not completion.from_fallback
            and not self.counter.exact
            and usage.prompt_tokens
        ):
            self.counter.observe(self.counter.count_messages(transcript), usage.prompt_tokens)
        bill.add(usage)
        return completion

    def hung_up(
        self, transcript: list[dict[str, Any]], done: Cut, bill: Bill, model: str
    ) -> Completion:
        """The completion of a stream the bot left at its reply cap, billed by our own count:
        at least what we read (the provider bills what it wrote before it saw us go)."""
        usage = Usage(self.counter.count_messages(transcript), self.counter.count_text(done.kept))
        bill.add(usage)
        return Completion(done.text, finish_reason=REPLY_LIMIT, usage=usage, model=model)
