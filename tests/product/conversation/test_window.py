"""``bot.prompt.window``: a prompt that extends the previous one byte for byte between cuts.

A simulated conversation runs the service's own steps (load the window, place or cut it, build
the prompt, store the turn with its overheard context) over random turns: tool calls, overheard
chatter, recalled lines, a summary that compaction rewrites now and then.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.llm.tokens import TokenCounter
from bot.prompt.assembly import (
    PromptLimits,
    build_prompt,
    history_cost,
    history_room,
    system_block,
    user_message,
)
from bot.prompt.window import Placement, spans, window_for
from bot.values import Overheard, StoredTurn, TurnStatus, WindowMark

COUNTER = TokenCounter("gpt-4o")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "roll_dice",
            "description": "Roll dice.",
            "parameters": {"type": "object", "properties": {"sides": {"type": "integer"}}},
        },
    }
]
WORDS = ["tea", "rain", "bread", "train", "book", "river", "lamp", "chess", "moon", "garden"]


@dataclass(frozen=True)
class Step:
    words: int  # length of the user's message
    reply: int  # length of the answer
    overheard: int  # group messages since the last answer
    recalled: int  # lines recall brings
    tool: bool  # the answer calls a tool first
    compacted: bool  # compaction wrote a newer summary before this turn


steps = st.builds(
    Step,
    words=st.integers(1, 60),
    reply=st.integers(1, 80),
    overheard=st.integers(0, 2),
    recalled=st.integers(0, 4),
    tool=st.booleans(),
    compacted=st.integers(0, 9).map(lambda n: n == 0),
)


def text(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed * 7 + i) % len(WORDS)] for i in range(n))


@dataclass
class Conversation:
    """The store's side, as the SQLite backend keeps it (the window as ``load_window`` reads it)."""

    limits: PromptLimits
    turns: list[StoredTurn] = field(default_factory=list)
    mark: WindowMark | None = None
    summary: str | None = None
    next_id: int = 1

    def load(self) -> list[StoredTurn]:
        """The newest ``max_turns`` turns, with the context rows among them (not counted)."""
        real = [t for t in self.turns if t.status is not TurnStatus.CONTEXT]
        if len(real) < self.limits.max_turns:
            return list(self.turns)
        oldest = real[-self.limits.max_turns].turn_id  # its context rows stay out
        return [t for t in self.turns if t.turn_id >= oldest]

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def run(self, step: Step, n: int) -> tuple[list[dict[str, Any]], int, Placement]:
        """One turn: returns the request sent, its tail length and the window placed."""
        if step.compacted and self.mark is not None:  # it summarises what left the window
            self.summary = f"summary {n}: " + text(20, n)
        heard = [
            Overheard(self.new_id(), "2", "Bo", text(5, n + i), 0.0) for i in range(step.overheard)
        ]
        said = text(step.words, n)
        user = user_message(said, "Ann", True)

        recalled = [json.dumps({"fact": text(6, n * 3 + i)}) for i in range(step.recalled)]

        def room(summary: str | None) -> int:
            return history_room(
                system=system_block("be kind", summary, COUNTER, self.limits),
                overheard=heard,
                user=user,
                tools=TOOLS,
                counter=COUNTER,
                limits=self.limits,
                recalled=recalled,
            )

        placed = window_for(
            self.load(),
            self.mark,
            self.summary,
            cost=lambda turns: history_cost(turns, True, COUNTER),
            room=room,
            max_turns=self.limits.max_turns,
            low_water=self.limits.low_water,
        )
        if placed.cut is not None:
            self.mark = placed.cut
        prompt = build_prompt(
            system_prompt="be kind",
            summary=placed.summary,
            history=placed.turns,
            overheard=heard,
            recalled=recalled,
            text=said,
            speaker="Ann",
            shared=True,
            tools=TOOLS,
            counter=COUNTER,
            limits=self.limits,
        )
        self.store(heard, said, step, n)
        tail = 1 + (1 if recalled else 0)  # the recalled block and the message
        return prompt.window, tail, placed

    def store(self, heard: list[Overheard], said: str, step: Step, n: int) -> None:
        for o in heard:  # moved into the turn as context rows, before it
            message = {"role": "user", "content": o.text}
            self.turns.append(
                StoredTurn(o.overheard_id, o.user_id, o.user_name, TurnStatus.CONTEXT, (message,))
            )
        answer: list[dict[str, Any]] = []
        if step.tool:
            call = {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": "roll_dice", "arguments": "{}"},
            }
            answer += [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"call_{n}", "content": "4"},
            ]
        answer.append({"role": "assistant", "content": text(step.reply, n + 1)})
        messages = ({"role": "user", "content": said}, *answer)
        self.turns.append(StoredTurn(self.new_id(), "1", "Ann", TurnStatus.ANSWERED, messages))


def wire(messages: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(m, ensure_ascii=False) for m in messages]


@settings(max_examples=25, deadline=None)
@given(
    conversation=st.lists(steps, min_size=30, max_size=90),
    window=st.sampled_from([2500, 4000, 16_000]),
    max_turns=st.sampled_from([6, 12, 50]),
    low_water=st.sampled_from([0.5, 0.65, 0.8]),
)
def test_each_request_extends_the_last_or_follows_a_cut(
    conversation: list[Step], window: int, max_turns: int, low_water: float
) -> None:
    limits = PromptLimits(
        context_window=window,
        reply_reserve=256,
        recalled_cap=120,
        max_turns=max_turns,
        low_water=low_water,
    )
    chat = Conversation(limits)
    previous: tuple[list[str], int] | None = None
    cuts: list[int] = []
    for n, step in enumerate(conversation):
        sent, tail, placed = chat.run(step, n)
        body = wire(sent)
        if placed.cut is not None:
            cuts.append(n)
        elif previous is not None:
            stable = previous[0][: len(previous[0]) - previous[1]]
            assert body[: len(stable)] == stable, f"turn {n}: the prefix changed without a cut"
        previous = (body, tail)
    # a cut leaves low_water of both budgets; the next comes only once the turns added since
    # fill the rest (each turn here costs at most about 400 tokens; rooms vary with the tail)
    by_turns = max_turns - int(max_turns * low_water) - 1
    rooms = _rooms(limits)
    by_tokens = int((rooms[0] - low_water * rooms[1]) // 400)
    for earlier, later in itertools.pairwise(cuts):
        assert later - earlier >= min(by_turns, by_tokens), (cuts, by_turns, by_tokens)


def _rooms(limits: PromptLimits) -> tuple[int, int]:
    """The smallest and largest history room a step above can leave."""

    def room(words: int, heard: int, summary: str | None) -> int:
        return history_room(
            system=system_block("be kind", summary, COUNTER, limits),
            overheard=[Overheard(i, "2", "Bo", text(5, i), 0.0) for i in range(heard)],
            user=user_message(text(words, 0), "Ann", True),
            tools=TOOLS,
            counter=COUNTER,
            limits=limits,
            recalled=None if heard else [],  # the cap reserved, or nothing recalled
        )

    return room(60, 2, "summary 99: " + text(20, 1)), room(1, 0, None)


def test_spans_keep_overheard_context_with_its_turn() -> None:
    def t(i: int, status: TurnStatus) -> StoredTurn:
        return StoredTurn(i, "1", "A", status, ({"role": "user", "content": str(i)},))

    ctx, ans = TurnStatus.CONTEXT, TurnStatus.ANSWERED
    grouped = spans([t(1, ans), t(2, ctx), t(3, ctx), t(4, ans), t(5, ans)])
    assert [[x.turn_id for x in s] for s in grouped] == [[1], [2, 3, 4], [5]]


def test_a_window_never_cut_shows_the_newest_summary_and_a_cut_pins_it() -> None:
    limits = PromptLimits(context_window=100_000, reply_reserve=100, max_turns=4, low_water=0.5)
    chat = Conversation(limits)
    chat.summary = "first"
    shown = []
    for n in range(12):
        chat.summary = f"summary {n}"  # compaction rewrote it before every turn
        _, _, placed = chat.run(Step(3, 3, 0, 0, False, False), n)
        shown.append((placed.summary, placed.cut is not None))
    assert shown[0] == ("summary 0", False)  # never cut: shown as it comes
    cut_at = [n for n, (_, cut) in enumerate(shown) if cut]
    assert cut_at  # 4 turns is the budget: cut every few turns
    for n, (summary, _cut) in enumerate(shown):
        if n >= cut_at[0]:
            last_cut = max(c for c in cut_at if c <= n)
            assert summary == f"summary {last_cut}"  # pinned at the last cut, not rewritten
