"""A deterministic, realistic-looking conversation for the prompt-cache section: what the user
says (mostly a sentence or two, now and then a pasted paragraph or a long note) and what the
fake model answers (a few sentences). Seeded, so every run sends the same bytes.

The words come from a few everyday topics, so full-text recall finds old messages the way it
would in a real chat (a recalled block that changes from turn to turn is part of what is
measured), and a long message is long enough that a 4,000-token window must cut history.
"""

from __future__ import annotations

import json
import random
import zlib
from typing import Any

SUMMARY_PROMPT_START = "You maintain the long-term memory"  # bot.memory.compaction's request

_TOPICS: dict[str, tuple[str, ...]] = {
    "garden": ("tomatoes", "raised bed", "compost", "seedlings", "watering can", "greenhouse"),
    "travel": ("train to Lyon", "hostel", "passport", "night bus", "museum pass", "ferry"),
    "cooking": ("risotto", "sourdough starter", "cast iron pan", "lentil soup", "spice rack"),
    "work": ("quarterly report", "standup", "deadline", "spreadsheet", "client call", "laptop"),
    "fitness": ("5k run", "rowing machine", "stretching", "knee brace", "swimming pool"),
    "books": ("detective novel", "library card", "audiobook", "poetry collection", "book club"),
}
_OPENERS = (
    "I was thinking about the {thing} again.",
    "Quick question about the {thing}.",
    "So the {thing} did not go as planned.",
    "Remind me what we said about the {thing}?",
    "Any idea how to deal with the {thing} this week?",
    "Update on the {thing}: it is better than I expected.",
    "My sister asked me about the {thing} yesterday.",
)
_MIDDLES = (
    "It took most of {day} and I am still not sure it was worth it.",
    "I compared it with the {other} and the difference is bigger than I thought.",
    "The plan was to finish by {day}, but the {other} got in the way.",
    "Honestly I would rather spend the time on the {other}.",
    "A friend suggested I write down every step, so here is roughly what happened.",
    "The cost came to about {number} euros, which is more than last time.",
    "I tried it {number} times and it only worked once.",
    "Maybe I should ask someone who knows more about the {other}.",
)
_CLOSERS = (
    "What would you do?",
    "Does that sound reasonable?",
    "Can you give me two or three options?",
    "Thanks in advance.",
    "Keep it short please.",
    "",
)
_REPLIES = (
    "That sounds like a sensible plan for the {thing}.",
    "I would start with the {thing} and leave the {other} for later.",
    "A simple option is to set aside {number} minutes on {day} for it.",
    "If it keeps failing, look at what changed since last time.",
    "Writing the steps down, as your friend said, usually helps.",
    "The {other} can wait; it will still be there next week.",
    "You could also ask at the {other}, people there tend to know.",
    "Either way, keep a note so we can compare next time.",
)
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# (share of user messages, sentences in them): short, a few lines, a paragraph, a pasted note
_LENGTHS = ((0.55, (1, 2)), (0.27, (3, 5)), (0.13, (8, 14)), (0.05, (25, 45)))


def _fill(template: str, rng: random.Random, topic: str) -> str:
    things = _TOPICS[topic]
    others = _TOPICS[rng.choice(sorted(_TOPICS))]
    return template.format(
        thing=rng.choice(things),
        other=rng.choice(others),
        day=rng.choice(_DAYS),
        number=rng.randint(2, 90),
    )


def user_messages(turns: int, seed: int) -> list[str]:
    """``turns`` user messages: a topic is kept for a few messages, then another one starts."""
    rng = random.Random(seed)
    topics = sorted(_TOPICS)
    topic = rng.choice(topics)
    messages: list[str] = []
    for _ in range(turns):
        if rng.random() < 0.2:
            topic = rng.choice(topics)
        draw, sentences = rng.random(), (1, 2)
        for share, span in _LENGTHS:
            if draw < share:
                sentences = span
                break
            draw -= share
        count = rng.randint(*sentences)
        parts = [_fill(rng.choice(_OPENERS), rng, topic)]
        parts += [_fill(rng.choice(_MIDDLES), rng, topic) for _ in range(count - 1)]
        closer = rng.choice(_CLOSERS)
        messages.append(" ".join([*parts, closer]).strip())
    return messages


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def is_summary_request(body: dict[str, Any]) -> bool:
    """The compactor's summarising call, not a chat turn."""
    messages = body.get("messages") or []
    first = messages[0].get("content") if messages else None
    return isinstance(first, str) and first.startswith(SUMMARY_PROMPT_START)


def fake_reply(body: dict[str, Any]) -> str:
    """The fake model's answer (``FakeLLM.default_reply``): a few sentences, decided by the
    message answered, so a run is repeatable whatever the order of background calls; the
    compactor gets the JSON it asks for."""
    messages: list[dict[str, Any]] = body["messages"]
    asked = _last_user_text(messages)
    rng = random.Random(zlib.crc32(asked.encode("utf-8", "replace")))
    topic = rng.choice(sorted(_TOPICS))
    sentences = [_fill(rng.choice(_REPLIES), rng, topic) for _ in range(rng.randint(2, 5))]
    if is_summary_request(body):
        summary = " ".join(sentences) + " The user keeps coming back to the same few plans."
        fact = f"The user cares about the {rng.choice(_TOPICS[topic])}."
        return json.dumps({"summary": summary, "facts": [fact]})
    return " ".join(sentences)
