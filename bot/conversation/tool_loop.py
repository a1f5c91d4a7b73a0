"""The tool loop: call the model, run its tool calls in parallel, repeat (bounded).

Each round sends the transcript (the trimmed prompt plus this turn's rounds so far) and either
ends the turn with text or runs the tool calls, all of one reply at once, and sends the results
back. From round ``max_tool_rounds`` on tools are still described but ``tool_choice="none"``: the
model must answer in text. Tool calls are never run when tools were not offered, or when the
output limit cut them off. An empty answer becomes a short apology.

A provider's ``context_length_exceeded`` (our count was too low) is retried once, the prompt
re-trimmed to ``CONTEXT_RETRY_FACTOR`` of its budget. Every round's text is capped at
``limits.max_reply_chars`` (streamed: ``bot.conversation.stream_buffer`` hangs up; otherwise
cut here); a capped round ends the turn and its tool calls never run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any

from bot.context import ChatContext
from bot.conversation.billing import Bill, Meter
from bot.conversation.events import ChatEvent, ToolFinished, ToolStarted
from bot.conversation.reply_cap import REPLY_LIMIT, Cut, SplitReply, as_shown, cut, fit_messages
from bot.conversation.stream_buffer import buffered
from bot.conversation.tool_runner import ToolRunner
from bot.errors import LLMContextLengthError
from bot.llm.client import Completion, LLMClient, StreamItem, TextDelta, ToolCall
from bot.platform.media import data_url
from bot.plugins.output import ToolOutput, ToolResult, text_of
from bot.prompt.assembly import Prompt, fit

log = logging.getLogger(__name__)

NO_ANSWER = "Sorry, I could not come up with an answer to that."
CONTEXT_RETRY_FACTOR = 0.7  # after a provider's context_length_exceeded, retry once this smaller

Message = dict[str, Any]


class Answer:
    """What a turn's rounds add to the conversation (each round's assistant message and tool
    results, in order), and the last round's completion."""

    __slots__ = ("_final", "cut", "messages", "rendered")

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._final: Completion | None = None
        self.cut: Cut | None = None  # the bot cut the last round's text at its reply limit
        self.rendered: tuple[str, ...] | None = None  # the adapter's messages of the final text

    @property
    def final(self) -> Completion:
        assert self._final is not None, "the loop has not run"
        return self._final

    def add(self, completion: Completion, messages: list[Message], cut: Cut | None = None) -> None:
        self.messages.extend(messages)
        self._final, self.cut = completion, cut

    def add_note(self, note: str) -> None:
        """Text the bot adds under the final answer (its sources line): shown and stored."""
        final = replace(self.final, text=self.final.text + note)
        self._final = final
        self.messages[-1] = final.assistant_message()

    async def fit(self, split: SplitReply, most: int) -> None:
        """Cut the final text further if the adapter needs more than ``most`` messages for it
        as shown; the stored answer (the last message) follows. The messages measured last are
        kept in ``rendered``, so the adapter sends them without rendering the answer again."""
        final = self.final
        if final.tool_calls:
            return
        shown = as_shown(final.text, final.finish_reason)
        body = self.cut.kept if self.cut is not None else final.text
        fitted = await fit_messages(shown, split, most, body=body)
        self.rendered = fitted.messages
        if fitted.cut is None:
            return
        log.info("answer cut to fit limits.max_reply_messages=%d", most)
        self._final = cut_short(final, fitted.cut)
        self.messages[-1] = self._final.assistant_message()


class ToolLoop:
    def __init__(
        self,
        llm: LLMClient,
        runner: ToolRunner | None,
        meter: Meter,
        *,
        slot: Callable[[], AbstractAsyncContextManager[None]],
        max_rounds: int,
        max_output: int,
        max_reply: int,
    ) -> None:
        self.llm = llm
        self.runner = runner  # runs the calls; None: a reply's calls end the turn unrun
        self.meter = meter
        self.slot = slot
        self.max_rounds = max_rounds
        self.max_output = max_output
        self.max_reply = max_reply

    async def run(
        self,
        ctx: ChatContext,
        prompt: Prompt,
        tools: list[dict[str, Any]],
        bill: Bill,
        answer: Answer,
        *,
        streaming: bool,
        conversation_key: str | None = None,
        model: str | None = None,
        runner: ToolRunner | None = None,
    ) -> AsyncGenerator[ChatEvent, None]:
        """Text deltas (streaming) and tool events; each round's messages go to ``answer``,
        whose final completion has no tool calls left to run. ``conversation_key`` goes with
        every round, for the provider's prompt cache (:mod:`bot.llm.cache_hints`); ``model``
        (a ``chats:`` preset's) replaces the primary endpoint's model for every round;
        ``runner`` (this turn's, with its knowledge search) replaces the loop's own."""
        runner = runner if runner is not None else self.runner
        window, budget = prompt.window, prompt.budget
        transcript = list(window)
        retried_context = False
        rounds = 0
        while True:
            may_call = bool(tools) and rounds < self.max_rounds
            offer = tools or None
            choice = None if may_call or not tools else "none"  # past the cap: answer in text
            try:
                completion: Completion | None = None
                capped: Cut | None = None
                if streaming:
                    items = self._streamed(
                        transcript,
                        offer,
                        choice,
                        bill,
                        first=rounds == 0,
                        key=conversation_key,
                        model=model,
                    )
                    async with contextlib.aclosing(items) as stream:
                        async for item in stream:
                            if isinstance(item, TextDelta):
                                yield item
                            elif isinstance(item, Cut):
                                capped = item
                            else:
                                completion = item
                else:
                    async with self.slot():
                        completion = await self.llm.complete(
                            transcript,
                            tools=offer,
                            tool_choice=choice,
                            max_tokens=self.max_output,
                            conversation_key=conversation_key,
                            model=model,
                        )
                    completion = self.meter.paid(transcript, completion, bill, first=rounds == 0)
                    if len(completion.text) > self.max_reply:
                        log.warning("answer passed limits.max_reply_chars=%d", self.max_reply)
                        capped = cut(completion.text, self.max_reply)
                        completion = cut_short(completion, capped)
                assert completion is not None
            except LLMContextLengthError:
                if retried_context:
                    raise
                retried_context = True
                budget = int(budget * CONTEXT_RETRY_FACTOR)
                answered = transcript[len(window) :]
                window = fit(prompt.messages, budget, self.meter.counter)
                transcript = window + answered
                log.info("provider said context too long; retrying once with budget=%d", budget)
                continue
            if completion.tool_calls and (not may_call or completion.finish_reason == "length"):
                # Tools not offered, or calls cut off at the output limit: never run them.
                completion = replace(completion, tool_calls=())
            if not completion.tool_calls and not completion.text.strip():
                completion = replace(completion, text=NO_ANSWER)
            assistant = completion.assistant_message()
            transcript.append(assistant)
            if not completion.tool_calls or runner is None:
                answer.add(completion, [assistant], capped)
                return
            for call in completion.tool_calls:
                yield ToolStarted(call)
            results = await asyncio.gather(
                *(runner.run(ctx, call) for call in completion.tool_calls)
            )
            tool_messages: list[Message] = []
            for call, result in zip(completion.tool_calls, results, strict=True):
                text = text_of(result)
                tool_messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
                yield ToolFinished(call, text)
            transcript.extend(tool_messages)
            # images the tools returned: shown for the rest of this answer, never stored
            transcript.extend(tool_images(completion.tool_calls, results))
            answer.add(completion, [assistant, *tool_messages])
            rounds += 1

    def _streamed(
        self,
        transcript: list[Message],
        tools: list[dict[str, Any]] | None,
        choice: str | None,
        bill: Bill,
        *,
        first: bool,
        key: str | None,
        model: str | None = None,
    ) -> AsyncGenerator[StreamItem | Cut, None]:
        """One round's stream, buffered (the loop appends to ``transcript`` only after it);
        its completion billed, its text capped."""
        return buffered(
            lambda: self.llm.stream(
                transcript,
                tools=tools,
                tool_choice=choice,
                max_tokens=self.max_output,
                conversation_key=key,
                model=model,
            ),
            slot=self.slot,
            max_chars=self.max_reply,
            paid=lambda completion: self.meter.paid(transcript, completion, bill, first=first),
            hung_up=lambda done: self.meter.hung_up(
                transcript, done, bill, model or self.llm.model
            ),
        )


def cut_short(completion: Completion, done: Cut) -> Completion:
    """A round whose text the bot cut: it ends the turn, its tool calls are never run."""
    return replace(completion, text=done.text, tool_calls=(), finish_reason=REPLY_LIMIT)


def tool_images(calls: tuple[ToolCall, ...], results: list[ToolResult]) -> list[Message]:
    """A user message with the images a round's tools returned (the chat API takes images only
    from the user), after all of the round's tool messages; none when no tool gave one."""
    parts: list[dict[str, Any]] = []
    for call, result in zip(calls, results, strict=True):
        if isinstance(result, ToolOutput) and result.images:
            parts.append({"type": "text", "text": f"Images returned by {call.name}:"})
            parts.extend(
                {"type": "image_url", "image_url": {"url": data_url(image)}}
                for image in result.images
            )
    return [{"role": "user", "content": parts}] if parts else []
