"""``/catchup`` in Telegram, end to end: aiogram on the fake Bot API, the openai SDK on the fake
LLM. What the model is sent (the span, the speakers, nothing from elsewhere or before a
``/clear``), what the group sees (a reply to the asker, nobody else pinged), what is booked."""

from __future__ import annotations

import json
from typing import Any

from bot.guardrails.budgets import utc_day
from bot.llm.tokens import get_counter
from bot.testing.fake_llm import FakeLLM, error, reply
from bot.testing.fake_telegram import FakeTelegram
from tests.conftest import AppFactory
from tests.telegram_harness import fed_bot

NAMES = ("Alice", "Bob", "Carol", "Dave")


def quoted_lines(body: dict[str, Any]) -> list[list[str]]:
    """The transcript lines a catch-up request carries: ``[time, speaker, words]``."""
    content = str(body["messages"][-1]["content"])
    return [json.loads(line) for line in content.splitlines() if line.startswith("[")]


async def test_catchup_summarises_the_span_since_the_askers_last_message(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    tg.privacy_mode = False  # the bot sees (and keeps) the group's chatter
    alice, bob, carol, dave = (tg.user(7 + n, name) for n, name in enumerate(NAMES))
    team = tg.group(-100, "Team", supergroup=True)
    other = tg.group(-200, "Elsewhere", supergroup=True)
    tg.set_member(team["id"], alice["id"], "creator")
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:
        tg.send(team, bob, "the old secret plan")
        tg.send(team, carol, "me too, before the clear")
        await fed.feed()
        tg.send(team, alice, "/clear")
        await fed.replies(team["id"])
        tg.send(team, carol, "brb, meeting")
        tg.send(team, bob, "lunch at noon?")
        tg.send(other, tg.user(11, "Eve"), "the other group's secret")
        await fed.feed()
        fake_llm.script(reply("Booked for noon."))
        tg.send(team, dave, "@parlour_bot book us a table")
        await fed.replies(team["id"], count=2)
        tg.send(team, bob, "see you there @carol_user")
        await fed.feed()
        fake_llm.script(reply("- Bob asked about lunch at noon; Dave had @parlour_bot book it."))
        asked = tg.send(team, carol, "/catchup")
        digest = (await fed.replies(team["id"], count=3))[-1]
        booked = await fed.app.store.user_usage_on(utc_day(), "telegram", str(carol["id"]))

    request = fake_llm.chat_requests[-1].json
    assert [(who, words) for _, who, words in quoted_lines(request)] == [
        ("Bob", "lunch at noon?"),
        ("Dave", "book us a table"),
        ("(bot)", "Booked for noon."),
        ("Bob", "see you there @carol_user"),
    ]
    sent = json.dumps(request)
    for gone in ("old secret plan", "before the clear", "other group", "brb"):
        assert gone not in sent
    assert "quoted data" in request["messages"][0]["content"]  # instructions stay apart
    assert digest["reply_to_message"]["message_id"] == asked["message_id"]
    assert digest["text"].startswith("Catch-up since your last message (")
    assert ": 3 messages from Bob and Dave." in digest["text"]
    assert "Bob asked about lunch at noon" in digest["text"]
    assert "@parlour_bot" not in digest["text"]  # named, never pinged
    assert not any(e["type"] == "mention" for e in digest.get("entities", []))
    assert booked.prompt_tokens > 0 and booked.completion_tokens > 0


async def test_spans_by_hours_and_by_count_and_clear_refusals(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    tg.privacy_mode = False
    bob, carol = tg.user(8, "Bob"), tg.user(9, "Carol")
    team = tg.group(-100, "Team", supergroup=True)
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:
        for n in range(4):
            tg.send(team, bob, f"point {n}")
        await fed.feed()
        fake_llm.script(reply("- Bob made points 2 and 3."), reply("- Bob made four points."))
        tg.send(team, carol, "/catchup 2")
        by_count = (await fed.replies(team["id"]))[-1]
        assert [words for _, _, words in quoted_lines(fake_llm.chat_requests[-1].json)] == [
            "point 2",
            "point 3",
        ]
        assert by_count["text"].startswith("Catch-up of the last 2 messages from Bob.")
        tg.send(team, carol, "/catchup@parlour_bot 90 min")
        by_time = (await fed.replies(team["id"], count=2))[-1]
        assert len(quoted_lines(fake_llm.chat_requests[-1].json)) == 4
        assert by_time["text"].startswith("Catch-up of the last 1.5 hours: 4 messages from Bob.")
        asked = len(fake_llm.chat_requests)
        refusals = {
            "/catchup yesterday": "That is not a span I know.",
            "/catchup 0": "Ask for at least one message.",
            "/catchup 5000": "I read at most 1000 messages.",
            "/catchup 100h": "I look back at most 72 hours.",
            "/catchup 0h": "Ask for more than no time at all.",
        }
        typing = sum(c.method == "sendChatAction" for c in tg.calls)
        for command in refusals:
            tg.send(team, carol, command)
        told = (await fed.replies(team["id"], count=2 + len(refusals)))[-len(refusals) :]
        assert sum(c.method == "sendChatAction" for c in tg.calls) == typing  # none for these
    for answer, (command, problem) in zip(told, refusals.items(), strict=True):
        assert answer["text"].startswith(problem), command
        assert (
            "Usage: /catchup (what was said since your last message), /catchup 2h"
            in (answer["text"])
        )
    assert len(fake_llm.chat_requests) == asked  # a refusal costs no model call


async def test_private_chats_empty_spans_and_per_person_groups_are_answered_plainly(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    tg.privacy_mode = False
    alice, bob = tg.user(7, "Alice"), tg.user(8, "Bob")
    dm = tg.private_chat(alice)
    team = tg.group(-100, "Team", supergroup=True)
    quiet_group = tg.group(-300, "Quiet", supergroup=True)
    split = tg.group(-400, "Split", supergroup=True)
    tg.set_member(split["id"], alice["id"], "creator")
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:
        tg.send(dm, alice, "/catchup")
        [private] = await fed.replies(dm["id"])
        tg.send(quiet_group, alice, "/catchup")
        [nothing_yet] = await fed.replies(quiet_group["id"])
        tg.send(team, bob, "anyone here?")
        tg.send(team, alice, "yes, me")
        await fed.feed()
        tg.send(team, alice, "/catchup")
        [nothing_new] = await fed.replies(team["id"])
        tg.send(team, alice, "/catchup 1h")
        tg.send(split, alice, "/scope user")
        await fed.replies(split["id"])
        tg.send(split, bob, "hello")
        tg.send(split, alice, "/catchup")
        per_person = (await fed.replies(split["id"], count=2))[-1]
    assert "/catchup sums up what a group said while you were away" in private["text"]
    in_groups = {c["command"] for c in tg.commands_for("all_group_chats")}
    assert "catchup" in in_groups
    assert "catchup" not in {c["command"] for c in tg.commands_for("all_private_chats")}
    assert nothing_yet["text"] == "I have nothing from this conversation to catch you up on yet."
    assert nothing_new["text"].startswith("Nothing new here since your last message (")
    assert nothing_new["text"].endswith("UTC). For earlier ones: /catchup 2h, or /catchup 50.")
    assert "each person has their own conversation with me" in per_person["text"]
    assert len(fake_llm.chat_requests) == 1  # only /catchup 1h had something to summarise


async def test_the_cost_is_booked_and_a_spent_budget_refuses(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    tg.privacy_mode = False
    bob, carol = tg.user(8, "Bob"), tg.user(9, "Carol")
    team = tg.group(-100, "Team", supergroup=True)
    limits = {"daily_tokens_per_user": 150}
    async with fed_bot(make_app, tg, telegram={"stream": False}, limits=limits) as fed:
        tg.send(team, bob, "the release is friday")
        await fed.feed()
        fake_llm.script(
            reply(
                "- Bob: the release is Friday.",
                usage={"prompt_tokens": 140, "completion_tokens": 12},
            )
        )
        tg.send(team, carol, "/catchup")
        first = (await fed.replies(team["id"]))[-1]
        booked = await fed.app.store.user_usage_on(utc_day(), "telegram", str(carol["id"]))
        chat_total = await fed.app.store.tokens_on(utc_day(), "telegram:-100")
        tg.send(team, carol, "/catchup 5")
        refused = (await fed.replies(team["id"], count=2))[-1]
        tg.send(team, carol, "@parlour_bot and a normal question?")
        answer = (await fed.replies(team["id"], count=3))[-1]
    assert "the release is Friday" in first["text"]
    assert (booked.prompt_tokens, booked.completion_tokens) == (140, 12)
    assert chat_total == 152
    assert refused["text"] == "You have used today's budget for me. It resets at midnight (UTC)."
    assert answer["text"] == refused["text"]  # the same budget a turn meets
    assert len(fake_llm.chat_requests) == 1


async def test_a_long_span_is_summarised_in_bounded_steps(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    tg.privacy_mode = False
    people = [tg.user(8 + n, name) for n, name in enumerate(("Bob", "Carol", "Dave"))]
    alice = tg.user(7, "Alice")
    team = tg.group(-100, "Team", supergroup=True)
    catchup = {"chunk_tokens": 400, "max_output_tokens": 60, "max_input_tokens": 5000}
    history = {"context_messages": 200}  # the chatter waits in full until the bot is asked
    said = [f"message {n}: the plan for the trip, part {n} of it" for n in range(60)]
    async with fed_bot(
        make_app, tg, telegram={"stream": False}, catchup=catchup, history=history
    ) as fed:
        for n, text in enumerate(said):
            tg.send(team, people[n % 3], text)
        await fed.feed()
        tg.send(team, alice, "/catchup")  # unscripted: the fake echoes what it was sent
        digest = (await fed.replies(team["id"]))[-1]
        booked = await fed.app.store.user_usage_on(utc_day(), "telegram", str(alice["id"]))

    requests = [r.json for r in fake_llm.chat_requests]
    count = get_counter("gpt-4o-mini").count_text
    for body in requests:  # each step within its budget, in and out
        assert body["max_tokens"] == 60
        assert count(body["messages"][-1]["content"]) <= 400 + 40
    *parts, final = requests
    assert len(parts) >= 3  # a map step per chunk, then the merge
    assert all("notes on one part" in body["messages"][0]["content"] for body in parts)
    in_order = sorted(parts, key=lambda body: part_number(body["messages"][-1]["content"]))
    read = [words for body in in_order for _, _, words in quoted_lines(body)]
    assert read == said  # every message once, in the order said
    assert "Merge them into one digest" in final["messages"][0]["content"]
    notes = [json.loads(line) for line in final["messages"][-1]["content"].splitlines()[1:]]
    assert [part_number(note.removeprefix("echo: ")) for note in notes] == list(
        range(1, len(parts) + 1)
    )
    assert digest["text"].startswith(
        "Catch-up of the latest 60 messages from Bob, Carol and Dave (none of yours among them)."
    )
    spent = [r.usage for r in fake_llm.chat_requests]
    assert booked.prompt_tokens == sum(u["prompt_tokens"] for u in spent if u)
    assert booked.completion_tokens == sum(u["completion_tokens"] for u in spent if u)


async def test_a_failure_half_way_still_books_the_calls_made(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    tg.privacy_mode = False
    bob, alice = tg.user(8, "Bob"), tg.user(7, "Alice")
    team = tg.group(-100, "Team", supergroup=True)
    catchup = {"chunk_tokens": 400, "max_output_tokens": 60, "max_input_tokens": 5000}
    history = {"context_messages": 200}
    async with fed_bot(
        make_app, tg, telegram={"stream": False}, catchup=catchup, history=history
    ) as fed:
        for n in range(60):
            tg.send(team, bob, f"message {n}: the plan for the trip, part {n} of it")
        await fed.feed()
        fake_llm.script(reply("notes"), reply("notes"), error(401))  # the third call fails
        tg.send(team, alice, "/catchup")
        told = (await fed.replies(team["id"]))[-1]
        booked = await fed.app.store.user_usage_on(utc_day(), "telegram", str(alice["id"]))
    assert told["text"] == "LLM authentication failed (admins: check the API key)."
    bodies = [r.json for r in fake_llm.chat_requests]
    assert all("notes on one part" in body["messages"][0]["content"] for body in bodies)
    answered = [r.usage for r in fake_llm.chat_requests if r.usage]
    assert len(answered) == len(bodies) - 1 >= 2  # every map call but the failed one answered
    assert booked.prompt_tokens == sum(u["prompt_tokens"] for u in answered)
    assert booked.completion_tokens == sum(u["completion_tokens"] for u in answered)


def part_number(content: str) -> int:
    head = content.split(".", 1)[0]  # "Part 2 of 4"
    assert head.startswith("Part "), content[:40]
    return int(head.split()[1])


async def test_one_catchup_at_a_time_per_person(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    tg = fake_telegram
    tg.privacy_mode = False
    bob, carol = tg.user(8, "Bob"), tg.user(9, "Carol")
    team = tg.group(-100, "Team", supergroup=True)
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:
        tg.send(team, bob, "the release is friday")
        await fed.feed()
        fake_llm.script(reply("- Bob: Friday.", delay=0.5))
        tg.send(team, carol, "/catchup")
        tg.send(team, carol, "/catchup")  # while the first is being written
        told, digest = await fed.replies(team["id"], count=2)  # the refusal comes first
    assert told["text"] == "I'm still writing your catch-up; it will be here in a moment."
    assert digest["text"].endswith("Bob: Friday.")
    assert len(fake_llm.chat_requests) == 1


async def test_a_busy_group_is_caught_up_beyond_the_chatter_a_prompt_shows(
    make_app: AppFactory, fake_llm: FakeLLM, fake_telegram: FakeTelegram
) -> None:
    """The prompts show the newest ``history.context_messages`` (20) of the chatter; /catchup
    reads all of it (kept *passed*, up to ``catchup.max_messages``), answered turn or not."""
    tg = fake_telegram
    tg.privacy_mode = False
    bob, dave, carol = tg.user(8, "Bob"), tg.user(10, "Dave"), tg.user(9, "Carol")
    team = tg.group(-100, "Team", supergroup=True)
    async with fed_bot(make_app, tg, telegram={"stream": False}) as fed:
        for n in range(30):
            tg.send(team, bob if n % 2 else dave, f"chatter {n}")
        await fed.feed()
        fake_llm.script(reply("Noted."))
        tg.send(team, dave, "@parlour_bot what do you make of it?")
        await fed.replies(team["id"])
        for n in range(30, 45):
            tg.send(team, bob, f"chatter {n}")
        await fed.feed()
        fake_llm.script(reply("- A long talk."))
        tg.send(team, carol, "/catchup 100")
        await fed.replies(team["id"], count=2)
    answered, catchup = fake_llm.chat_requests[-2].json, fake_llm.chat_requests[-1].json
    shown = json.dumps(answered)
    assert "chatter 29" in shown and 'chatter 5"' not in shown  # the prompt: newest 20 only
    words = [w for _, _, w in quoted_lines(catchup)]
    assert [w for w in words if w.startswith("chatter")] == [f"chatter {n}" for n in range(45)]
    assert "what do you make of it?" in words and "Noted." in words
