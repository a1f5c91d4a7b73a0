"""What section 14 (:mod:`bench.recall_public`) counts and prints: where each piece of
evidence is in a prompt, the tallies per system, and the table's rows.

A message counts as in the prompt when its stored text is in the window's contents in one of
the forms a prompt holds it: raw, tagged with its speaker on every line (the shared history;
a message with a newline is only found that way), or JSON-escaped (recalled lines are JSON).
It is placed in the history when found outside the recalled block, else in the block.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.common import Row
from bench.locomo import CATEGORIES, Conversation
from bot.prompt.safety import RECALLED_HEADER, with_speaker
from bot.values import FoundTurn

S14 = "14. Recall on LoCoMo"
DEFAULTS = "Parlour, defaults"
TARGET_SHARE = 0.70  # issue 28: questions with all their evidence in the prompt ...
TARGET_TOKENS = 2400  # ... at no more than this many prompt tokens on average
Message = dict[str, Any]


@dataclass(slots=True)
class Tally:
    """One system's figures over every question asked."""

    questions: int = 0
    all_found: int = 0
    any_found: int = 0
    tokens: int = 0
    history_turns: int = 0  # turns of history sent, summed over the questions
    by_category: dict[int, list[int]] = field(default_factory=dict)  # [questions, all found]
    in_history: int = 0  # evidence messages found in the history sent
    in_recalled: int = 0  # ... in the recalled block
    missed: int = 0

    def add(self, category: int, places: Sequence[str | None], tokens: int, turns: int) -> None:
        found = [p for p in places if p is not None]
        every = len(found) == len(places)
        self.questions += 1
        self.all_found += every
        self.any_found += bool(found)
        self.tokens += tokens
        self.history_turns += turns
        counts = self.by_category.setdefault(category, [0, 0])
        counts[0] += 1
        counts[1] += every
        self.in_history += found.count("history")
        self.in_recalled += found.count("recalled")
        self.missed += len(places) - len(found)


def prompt_forms(turn: FoundTurn) -> tuple[str, ...]:
    escaped = json.dumps(turn.text, ensure_ascii=False)[1:-1]
    return tuple(dict.fromkeys((turn.text, with_speaker(turn.user_name, turn.text), escaped)))


def places(
    window: Sequence[Message], evidence: Sequence[str], forms: Mapping[str, tuple[str, ...]]
) -> list[str | None]:
    """Where each piece of evidence is in ``window``: "history", "recalled" or None."""
    recalled = [str(m.get("content", "")) for m in window if is_recalled(m)]
    rest = [str(m.get("content", "")) for m in window if not is_recalled(m)]
    held = {"history": "\n".join(rest), "recalled": "\n".join(recalled)}
    out: list[str | None] = []
    for dia_id in evidence:
        held_as = forms[dia_id]
        out.append(next((p for p, t in held.items() if any(f in t for f in held_as)), None))
    return out


def is_recalled(message: Message) -> bool:
    return str(message.get("content", "")).startswith(RECALLED_HEADER)


def history_turns(window: Sequence[Message]) -> int:
    """Turns of history sent: each stored turn here is one user message (an empty answer)."""
    return sum(1 for m in window[:-1] if m["role"] == "user" and not is_recalled(m))


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.3f}" if whole else "n/a"


def recall_rows(
    conversations: Sequence[Conversation], tallies: Mapping[str, Tally], seconds: float
) -> list[Row]:
    questions = [q for c in conversations for q in c.questions]
    order = list(CATEGORIES)
    sizes = {k: sum(1 for q in questions if q.category == k) for k in order}
    evidence = sum(len(q.evidence) for q in questions)
    messages = sum(len(c.utterances) for c in conversations)
    rows = [
        Row(
            S14,
            "conversations / questions asked (categories 1-4 with evidence) / evidence"
            " messages / messages stored",
            f"{len(conversations)} / {len(questions):,} / {evidence:,} / {messages:,}",
        ),
        Row(
            S14,
            "evidence ids naming no message of their conversation (dropped)",
            str(sum(c.dropped_ids for c in conversations)),
        ),
    ]
    for name, t in tallies.items():
        mean = t.tokens / t.questions if t.questions else float("nan")
        rows.append(
            Row(
                S14,
                f"{name}: questions with all / any evidence in the prompt; mean prompt tokens",
                f"{_share(t.all_found, t.questions)} / {_share(t.any_found, t.questions)};"
                f" {mean:,.0f}",
            )
        )
    for name, t in tallies.items():
        labels = " / ".join(f"{CATEGORIES[k]} ({sizes[k]})" for k in order)
        shares = " / ".join(_share(*t.by_category.get(k, [0, 0])[::-1]) for k in order)
        rows.append(Row(S14, f"{name}: all evidence in the prompt, by category: {labels}", shares))
    for name, t in tallies.items():
        rows.append(
            Row(
                S14,
                f"{name}: evidence messages in the history sent / in the recalled block / missed",
                f"{t.in_history:,} / {t.in_recalled:,} / {t.missed:,}",
            )
        )
    name, base = next(iter(tallies.items()))
    if name == DEFAULTS and base.questions:  # issue 28's bar, at the shipped defaults
        share, mean = base.all_found / base.questions, base.tokens / base.questions
        rows.insert(
            2,
            Row(
                S14,
                f"{name}: questions with all their evidence in the prompt, at a mean prompt"
                f" of {mean:,.0f} tokens",
                f"{share:.1%}",
                f">= {TARGET_SHARE:.0%} at <= {TARGET_TOKENS:,} tokens",
                share >= TARGET_SHARE and mean <= TARGET_TOKENS,
            ),
        )
    mean_turns = base.history_turns / base.questions if base.questions else float("nan")
    rows.append(Row(S14, f"{name}: turns of history sent per question, mean", f"{mean_turns:.1f}"))
    rows.append(Row(S14, "run time (store, date, build every prompt)", f"{seconds:.0f} s"))
    return rows
