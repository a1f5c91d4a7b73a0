"""Section 14: does the message that answers a question reach the prompt, on conversations we
did not write? Recall on LoCoMo (:mod:`bench.locomo`), against two plain baselines.

Our own recall benches (section 6) ask about facts we planted, in words we chose: they cannot
say how recall does on how people really talk. LoCoMo's 10 conversations (about 590 messages
each, over months of dated sessions) come with questions whose answering messages are
annotated, so the share of questions whose evidence is in the prompt is a recall figure on
public text, comparable with anything else measured on it.

Per conversation, in a fresh SQLite file, through ``App`` on the fake LLM (never called):

* every message is stored, in order, as one turn of one group conversation (chat scope: shared,
  each line tagged with its speaker), by the store's ``begin_turn`` and ``complete_turn`` with
  an empty answer (people talking among themselves), its text cleaned as the service cleans a
  message; then each turn is dated with its session's date (a bench-only UPDATE);
* for each question, a third member asks it at the end of the conversation: the prompt is built
  by the service's own ``PromptBuilder`` as a turn builds it (the window, its mark and the
  question read as ``ChatService._answer`` reads them), and nothing is stored but the window
  mark the builder itself saves when it cuts. Each question sees the conversation as it ends:
  the mark is read once, right after the messages are stored, and every prompt of every system
  is built from it (a mark saved by one question is not read by the next). ``prompt.window``
  is what is sent.

A piece of evidence is in the prompt when its stored text is in the window's contents, raw, as
the speaker-tagged history holds it, or JSON-escaped (recalled lines are JSON). Tokens are the
product's own count of the window. Settings: the shipped defaults with ``history.max_tokens``
2000, memory on, no plugins, no rate limits; ``--set`` and ``--variant`` change them.

Baselines, over the same stored messages, dated and priced as the product renders a recalled
message (its own ``recalled_lines`` and ``build_prompt``: they follow any change of format):

* **plain BM25, 400 tokens**: every message ranked by Okapi BM25 (``rank-bm25``; lowercased
  word tokens) against the question, the best taken while their lines fit 400 tokens (a line
  costs its tokens + 2, as the recalled block counts it; one that does not fit is skipped), sent
  as the recalled block between the system prompt and the question, with no history;
* **recent window + BM25 over older turns, 1,000 tokens**: the newest messages, as many as
  Parlour's window sent for that question, plus BM25 over the older ones up to 1,000 tokens.

``python -m bench.recall_public [--conversations N] [--set memory.max_tokens=1000]
[--variant NAME:memory.min_relevance=0,memory.max_tokens=1000] [--misses FILE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

from bench.common import Row, make_settings
from bench.locomo import CATEGORIES, Conversation, DataMissing, Question, load, locate
from bench.recall_figures import (
    DEFAULTS,
    S14,
    Tally,
    history_turns,
    places,
    prompt_forms,
    recall_rows,
)
from bot.app import App
from bot.config import Settings
from bot.context import ChatContext, ChatType
from bot.conversation.service import ChatService
from bot.llm.tokens import TokenCounter
from bot.memory.provider import LINE_OVERHEAD
from bot.memory.recalled import message_line
from bot.prompt.assembly import build_prompt
from bot.testing.fake_llm import FakeLLM
from bot.values import NO_USAGE, FoundTurn, NewTurn, StoredTurn, WindowMark

HISTORY_BUDGET = 2000  # history.max_tokens of every run
PLAIN_TOKENS = 400
MIXED_TOKENS = 1000
PLATFORM = "locomo"
ASKER_ID, ASKER_NAME = "asker", "Asker"  # the group's third member, who asks the questions
BASE = DEFAULTS
PLAIN = f"plain BM25, {PLAIN_TOKENS} tokens"
MIXED = f"recent window + BM25 over older turns, {MIXED_TOKENS:,} tokens"
Message = dict[str, Any]
Overrides = dict[str, Any]  # settings sections, nested: {"memory": {"max_tokens": 1000}}
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class System:
    name: str
    overrides: Overrides  # on top of the bench's settings


@dataclass(frozen=True, slots=True)
class Stored:
    """One conversation as stored: its key and each message as recall would find it."""

    conversation: Conversation
    key: str
    turns: tuple[FoundTurn, ...]  # in the order said; created_at is the session's date
    forms: dict[str, tuple[str, ...]]  # dia id -> the forms its text takes in a prompt
    mark: WindowMark | None  # where the window began when the last message was stored


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def group(chat_id: str, user_id: str, name: str) -> ChatContext:
    return ChatContext(PLATFORM, chat_id, ChatType.GROUP, user_id, name)


def merged(base: Mapping[str, Any], extra: Mapping[str, Any]) -> Overrides:
    out = dict(base)
    for key, value in extra.items():
        old = out.get(key)
        both = isinstance(old, Mapping) and isinstance(value, Mapping)
        out[key] = merged(old, value) if both else value  # type: ignore[arg-type]
    return out


def setting(assignment: str) -> Overrides:
    """``section.key=value`` (the value read as YAML) as nested sections."""
    path, equals, value = assignment.partition("=")
    keys = [k for k in path.strip().split(".") if k]
    if not equals or len(keys) < 2:
        raise argparse.ArgumentTypeError(f"expected section.key=value, got {assignment!r}")
    nested: Overrides = {keys[-1]: yaml.safe_load(value)}
    for key in reversed(keys[:-1]):
        nested = {key: nested}
    return nested


def variant(spec: str) -> System:
    name, colon, rest = spec.partition(":")
    if not colon or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME:key=val,key=val, got {spec!r}")
    overrides: Overrides = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        overrides = merged(overrides, setting(item))
    return System(name.strip(), overrides)


def settings_for(base_url: str, db: Path, overrides: Overrides) -> Settings:
    sections = merged(
        {"history": {"max_tokens": HISTORY_BUDGET}, "memory": {"enabled": True}}, overrides
    )
    return make_settings(base_url, db, **sections)


async def store(settings: Settings, conversation: Conversation) -> Stored:
    """Every message as one answered turn of the group's conversation, then dated."""
    chat_id = conversation.sample_id
    ids = {name: str(n) for n, name in enumerate(conversation.speakers, 1)}
    turns: list[FoundTurn] = []
    keys: set[str] = set()
    async with App(settings) as app:
        service = app.service
        for said in conversation.utterances:
            ctx = group(chat_id, ids.setdefault(said.speaker, str(len(ids) + 1)), said.speaker)
            key = service.conversation_key(ctx)
            keys.add(key)
            text = service.admission.message_text(said.text)  # as the service stores it
            new = NewTurn(key, ctx.chat_key, ctx.user_id, ctx.user_name, text)
            turn_id = await app.store.begin_turn(new)
            await app.store.complete_turn(turn_id, [], NO_USAGE, settings.llm.model)
            turns.append(FoundTurn(turn_id, ctx.user_id, ctx.user_name, text, said.at))
        if len(keys) != 1 or keys != {service.conversation_key(group(chat_id, ASKER_ID, "x"))}:
            raise RuntimeError(f"the group's messages did not share one conversation: {keys}")
        mark = await app.store.load_window_mark(key)  # before any prompt: the builder saves one
        if app.memories is not None and settings.memory.embeddings.enabled:  # a steady state:
            app.memories.embed_turns_later(key)  # every old message with its vector before
            await app.memories.wait_for_turn_vectors()  # the first question, as in a live bot
    with sqlite3.connect(settings.storage.path) as db:  # the bot is closed: no cache to miss
        db.executemany(
            "UPDATE turns SET created_at = ? WHERE id = ?",
            [(t.created_at, t.turn_id) for t in turns],
        )
    db.close()
    forms = {u.dia_id: prompt_forms(t) for u, t in zip(conversation.utterances, turns, strict=True)}
    return Stored(conversation, keys.pop(), tuple(turns), forms, mark)


class Baselines:
    """Okapi BM25 over one conversation's stored messages, each priced as its recalled line."""

    def __init__(self, stored: Stored, counter: TokenCounter) -> None:
        turns = stored.turns
        self.index = BM25Okapi([words(t.text) for t in turns])
        self.lines = [message_line(t, shared=True) for t in turns]
        self.costs = [counter.count_text(line) + LINE_OVERHEAD for line in self.lines]

    def pick(self, query: Sequence[str], older_than: int, budget: int) -> list[str]:
        """The best of the first ``older_than`` messages, best first, while they fit."""
        scores = [float(s) for s in self.index.get_scores(list(query))[:older_than]]
        chosen: list[str] = []
        used = 0
        for n in sorted(range(len(scores)), key=lambda n: -scores[n]):
            if scores[n] <= 0:  # shares no word with the question
                break
            if used + self.costs[n] <= budget:  # as the recalled block: skip what won't fit
                chosen.append(self.lines[n])
                used += self.costs[n]
        return chosen


def baseline_window(
    service: ChatService,
    asker: ChatContext,
    text: str,
    history: Sequence[StoredTurn],
    lines: list[str],
    budget: int,
) -> list[Message]:
    builder = service.prompts
    prompt = build_prompt(
        system_prompt=service.system_prompt(asker),
        summary=None,
        history=history,
        overheard=[],
        recalled=lines,
        text=text,
        speaker=asker.user_name or asker.user_id,
        shared=True,
        tools=[],
        counter=builder.counter,
        limits=dataclasses.replace(builder.limits, recalled_cap=budget),
    )
    return prompt.window


async def ask(
    settings: Settings,
    stored: Stored,
    tallies: dict[str, Tally],
    system: str,
    misses: list[dict[str, Any]] | None,
) -> None:
    """Every question of the conversation, as the last message; for the first system (the
    defaults) the baselines too, with the history turn count its window sent."""
    conversation = stored.conversation
    async with App(settings) as app:
        service = app.service
        asker = group(conversation.sample_id, ASKER_ID, ASKER_NAME)
        key = service.conversation_key(asker)
        history = await app.store.load_window(key, settings.history.max_turns)
        counter = service.prompts.counter
        await service.prompts.counter_ready()
        baselines = Baselines(stored, counter) if misses is not None else None
        for question in conversation.questions:
            text = service.admission.message_text(question.text)
            said = await service.media.read(text, ())
            prompt = await service.prompts.build(asker, key, said, history, [], [], stored.mark)
            window = prompt.window
            found = places(window, question.evidence, stored.forms)
            sent = history_turns(window)
            tallies[system].add(question.category, found, counter.count_messages(window), sent)
            if baselines is None or misses is None:
                continue
            misses += missed(question, found, stored)
            query, total = words(said.query), len(stored.turns)
            recent = history[len(history) - sent :] if sent else []
            cases: list[tuple[str, Sequence[StoredTurn], list[str], int]] = [
                (PLAIN, [], baselines.pick(query, total, PLAIN_TOKENS), PLAIN_TOKENS),
                (MIXED, recent, baselines.pick(query, total - sent, MIXED_TOKENS), MIXED_TOKENS),
            ]
            for name, turns, lines, budget in cases:
                shown = baseline_window(service, asker, said.text, turns, lines, budget)
                found = places(shown, question.evidence, stored.forms)
                tallies[name].add(question.category, found, counter.count_messages(shown), sent)


def missed(question: Question, found: Sequence[str | None], stored: Stored) -> list[dict[str, Any]]:
    """The evidence ``found`` says is not in the prompt, one record each (``--misses``)."""
    conversation = stored.conversation
    turns = {u.dia_id: t for u, t in zip(conversation.utterances, stored.turns, strict=True)}
    return [
        {
            "conversation": conversation.sample_id,
            "question": question.text,
            "answer": question.answer,
            "category": CATEGORIES[question.category],
            "evidence": dia_id,
            "speaker": turns[dia_id].user_name,
            "text": turns[dia_id].text,
        }
        for dia_id, place in zip(question.evidence, found, strict=True)
        if place is None
    ]


async def measure(
    conversations: Sequence[Conversation], systems: Sequence[System], root: Path
) -> tuple[dict[str, Tally], list[dict[str, Any]]]:
    names = [systems[0].name, PLAIN, MIXED, *(s.name for s in systems[1:])]
    tallies = {name: Tally() for name in names}
    misses: list[dict[str, Any]] = []
    started = time.perf_counter()
    async with FakeLLM() as fake:
        for n, conversation in enumerate(conversations, 1):
            db = root / f"{conversation.sample_id}.db"
            stored = await store(
                settings_for(fake.base_url, db, systems[0].overrides), conversation
            )
            for i, system in enumerate(systems):
                settings = settings_for(fake.base_url, db, system.overrides)
                await ask(settings, stored, tallies, system.name, misses if i == 0 else None)
            sys.stderr.write(
                f"[{time.perf_counter() - started:6.1f} s] {n}/{len(conversations)}"
                f" {conversation.sample_id}: {len(conversation.utterances)} messages,"
                f" {len(conversation.questions)} questions\n"
            )
    return tallies, misses


async def measure_public_recall(root: Path) -> list[Row]:
    """Section 14 for ``python -m bench``: the defaults and both baselines on every
    conversation; one row saying why when the data cannot be had."""
    try:
        conversations = load(locate(None))
    except DataMissing as exc:
        return [Row(S14, "skipped: the LoCoMo data is not here", str(exc))]
    started = time.perf_counter()
    tallies, _ = await measure(conversations, [System(BASE, {})], root)
    return recall_rows(conversations, tallies, time.perf_counter() - started)


def main(argv: Sequence[str] | None = None) -> int:
    from bench.table import machine_line, render

    parser = argparse.ArgumentParser(
        prog="python -m bench.recall_public",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data",
        type=Path,
        help="locomo10.json (default: $PARLOUR_LOCOMO, else"
        " ~/.cache/parlour-bench/locomo10.json, downloaded when missing)",
    )
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="on top of the defaults (YAML value)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        type=variant,
        default=[],
        metavar="NAME:KEY=VAL,KEY=VAL",
        help="another row, on top of --set",
    )
    parser.add_argument(
        "--conversations",
        type=int,
        default=None,
        metavar="N",
        help="only the first N conversations",
    )
    parser.add_argument(
        "--misses",
        type=Path,
        metavar="FILE",
        help="write the defaults' missed evidence here (JSON lines)",
    )
    args = parser.parse_args(argv)
    try:
        conversations = load(locate(args.data))[: args.conversations]
    except DataMissing as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    base: Overrides = {}
    for each in args.sets:
        try:
            base = merged(base, setting(each))
        except argparse.ArgumentTypeError as exc:
            parser.error(str(exc))
    label = BASE + "".join(f", {each}" for each in args.sets)
    systems = [System(label, base)]
    systems += [System(f"Parlour, {v.name}", merged(base, v.overrides)) for v in args.variant]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="parlour-locomo-") as tmp:
        tallies, misses = asyncio.run(measure(conversations, systems, Path(tmp)))
    seconds = time.perf_counter() - started
    if args.misses is not None:
        with args.misses.open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(miss, ensure_ascii=False) + "\n" for miss in misses)
    print(machine_line())
    print()
    print(render(recall_rows(conversations, tallies, seconds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
