"""Recall fills its budget (issue 15, item 4; issue 28), through ChatService and the fake model:
recalled old messages carry their date and, in a group, their speaker; the block grows with
``memory.max_tokens`` up to it; a recalled message brings the exchange around it, in order; and
with embeddings an old message is found by meaning alone."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bot.prompt.safety import RECALLED_HEADER
from bot.testing.fake_llm import FakeLLM
from tests.conftest import AppFactory, group, private
from tests.product.memory.test_memory import recalled_blocks, recalled_text

SMALL = {"history": {"max_turns": 3}}
MODEL = "text-embedding-3-small"


def item(line: str) -> dict[str, Any]:
    """A recalled line, a JSON array: [date, speaker, words] or [date, who, "remember", fact]."""
    parsed = json.loads(line)
    assert isinstance(parsed, list) and all(isinstance(part, str) for part in parsed)
    if len(parsed) == 4:
        date, by, mark, fact = parsed
        assert mark == "remember"
        return {"date": date, "by": by, "fact": fact}
    date, by, said = parsed
    return {"date": date, "by": by, "said": said}


def items(fake: FakeLLM, index: int = -1) -> list[dict[str, Any]]:
    """The items this request's own recall brought."""
    return [item(line) for line in recalled_text(fake, index).splitlines()[1:]]


def carried(fake: FakeLLM, index: int = -1) -> list[dict[str, Any]]:
    """Every recalled item the request carries: the blocks earlier turns' requests brought
    (stored with those turns, back in the history) and this request's own."""
    blocks = recalled_blocks(fake, index)
    return [item(line) for block in blocks for line in block.splitlines()[1:]]


def recalled_messages(found: list[dict[str, Any]]) -> list[str]:
    """Every old message in the items, in order."""
    return [i["said"] for i in found if "said" in i]


def today() -> set[str]:
    return {datetime.now(UTC).date().isoformat()}


async def test_an_old_message_carries_its_date_and_in_a_group_its_speaker(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    alice, bob = group("8", "Alice", chat="-300"), group("9", "Bob", chat="-300")
    mei = private("7", "Mei")
    async with make_app(**SMALL) as app:
        days = today()
        await app.service.chat(alice, "the spare key is under the blue pot")
        await app.service.chat(mei, "my locker code is 7319")
        for n in range(4):
            await app.service.chat(bob, f"what about the weather {n}")
            await app.service.chat(mei, f"tell me a joke {n}")
        await app.service.chat(bob, "where is the spare key?")
        in_group = carried(fake_llm)
        await app.service.chat(mei, "what was my locker code?")
        in_private = carried(fake_llm)
    days |= today()
    [key] = [i for i in in_group if "blue pot" in i.get("said", "")]
    assert key["by"] == "Alice" and key["date"] in days
    [code] = [i for i in in_private if "7319" in i.get("said", "")]
    assert code["by"] == "the user" and code["date"] in days


async def test_the_recalled_block_grows_with_the_budget_up_to_it(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """30 matching old messages, top_k far above what fits: max_tokens decides how many."""
    blocks: dict[int, str] = {}
    for cap in (120, 480):
        sections = {**SMALL, "memory": {"top_k": 100, "max_tokens": cap}}
        async with make_app(**sections) as app:
            ann, bo = group("1", "Ann", chat=f"-{cap}"), group("2", "Bo", chat=f"-{cap}")
            for n in range(30):  # two speakers taking turns: nothing merges
                await app.service.chat(ann if n % 2 else bo, f"roses in bed {n} are lovely")
                for other in ("trains", "bread"):  # so that roses stay a distinctive word
                    await app.service.chat(ann, f"{other} number {n}")
            await app.service.chat(ann, "which roses were lovely?")
            # the window's earlier blocks (stored with their turns) and this request's own
            blocks[cap] = "".join(b.split(RECALLED_HEADER, 1)[1] for b in recalled_blocks(fake_llm))
            counter = app.service.counter  # the cap's own accounting: each line + 2
            costs = [counter.count_text(line) + 2 for line in blocks[cap].splitlines()[1:]]
            assert cap - max(costs) < sum(costs) <= cap  # filled: the next line would not fit
    small, large = (blocks[cap].count("roses in bed") for cap in (120, 480))
    assert 2 <= small < large and large > 5  # more than the old top_k, as far as the cap allows


async def test_a_recalled_message_brings_its_exchange_in_order(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """The answer is often the message after the one sharing the question's words."""
    for neighbours in (True, False):
        chat = "-400" if neighbours else "-401"
        alice, bob = group("8", "Alice", chat=chat), group("9", "Bob", chat=chat)
        async with make_app(**SMALL, memory={"neighbours": neighbours}) as app:
            await app.service.chat(alice, "so where is the picnic this year?")
            await app.service.chat(bob, "at the lake, by the old boathouse")
            await app.service.chat(alice, "lovely")
            for n in range(4):
                await app.service.chat(bob, f"nice weather {n}")
            await app.service.chat(bob, "where was the picnic?")
        said = recalled_messages(items(fake_llm))
        if neighbours:  # the match, then what was said right after and before it, as said
            assert said == [
                "so where is the picnic this year?",
                "at the lake, by the old boathouse",
            ]
            assert [i["by"] for i in items(fake_llm)] == ["Alice", "Bob"]
        else:
            assert said == ["so where is the picnic this year?"]


async def test_with_embeddings_an_old_message_is_found_by_meaning(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """'allergic' and 'allergies' share no stem (Porter: allerg / allergi), so full text alone
    misses; the fake's embeddings put them close, as a real model would."""
    said = "Mei is allergic to peanuts"
    asked = "any allergies?"
    for embeddings in (False, True):
        memory: dict[str, Any] = {"neighbours": False}  # found by meaning, not beside a match
        if embeddings:
            memory["embeddings"] = {"model": MODEL}
        ctx = private("7" if embeddings else "8", "Mei")
        async with make_app(**SMALL, memory=memory) as app:
            assert app.memories is not None
            await app.wait_for_backfill()  # the first chat's messages, embedded at start
            await app.service.chat(ctx, said)
            for n in range(4):
                await app.service.chat(ctx, f"tell me about trains {n}")
            await app.memories.wait_for_turn_vectors()  # the background filling, done
            await app.service.chat(ctx, asked)
        found = recalled_messages(items(fake_llm))
        assert (said in found) is embeddings
    # Each message was embedded once, for its own recall: its stored turn reused that vector;
    # the first chat's, said before embeddings were on, once each by the backfill at start.
    embedded = [text for r in fake_llm.embedding_requests for text in r.json["input"]]
    assert sorted(embedded) == sorted(
        2 * [said, *(f"tell me about trains {n}" for n in range(4)), asked]
    )


async def test_old_messages_far_below_the_best_match_are_left_out(
    make_app: AppFactory, fake_llm: FakeLLM
) -> None:
    """``memory.min_relevance``: a message sharing one ordinary word with the question is noise
    next to one that matches it well; with 0 every match comes, up to the budget."""
    said = [
        "the boiler pressure gauge reads two bar after the plumber visit",
        "the pressure at work is high this month",
        "my cousin visit went well",
    ]
    found: dict[float, list[str]] = {}
    for ratio in (0.7, 0.0):
        async with make_app(**SMALL, memory={"min_relevance": ratio, "neighbours": False}) as app:
            ctx = private(str(int(ratio * 10) + 20), "Ann")
            for text in said:
                await app.service.chat(ctx, text)
            for n in range(4):
                await app.service.chat(ctx, f"tell me a joke {n}")
            await app.service.chat(ctx, "what does the boiler pressure gauge read after the visit?")
        found[ratio] = recalled_messages(items(fake_llm))
    assert found[0.7] == [said[0]]  # the best match alone: the others share one word with it
    assert set(found[0.0]) == set(said)
