"""Ambient mode's pure parts: the text rules, the per-chat limits and the classifier's answer,
as tables and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.config.ambient import DEFAULT_QUESTION_WORDS, DEFAULT_STOP_PHRASES
from bot.conversation.ambient_classifier import parse_answer
from bot.conversation.ambient_limits import AmbientLimits
from bot.conversation.ambient_rules import (
    Reason,
    called_by_name,
    is_question,
    names_in,
    says_stop,
)

NAMES = ("Parlour", "parlour_bot")


@pytest.mark.parametrize(
    ("text", "called"),
    [
        ("Parlour, what time is it?", True),
        ("parlour: weather tomorrow", True),
        ("PARLOUR!", True),
        ("Parlour", True),
        ("hey Parlour", True),
        ("ok parlour_bot summarise this", True),
        ("thanks, Parlour", True),
        ("what do you think, Parlour", True),
        ("does Parlour know the time?", True),  # a question that names it
        ("Parlour what time is it?", True),
        ("Parlour is down again", False),  # talked about
        ("I asked Parlour yesterday", False),
        ("Parlours are nice rooms", False),  # not the whole word
        ("the parlour_botany club", False),
        ("what time is it?", False),  # no name
        ("", False),
    ],
)
def test_its_name_said_to_it(text: str, called: bool) -> None:
    assert called_by_name(text, NAMES) is called


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("what time is it", True),
        ("and of Italy?", True),
        ("So how does it work", True),
        ("is it raining", True),
        ("¿qué hora es?", True),
        ("今何時ですか？", True),
        ("ما هذا؟", True),
        ("thanks", False),
        ("and then we left", False),
        ("I wonder what time it is", False),
        ("", False),
    ],
)
def test_what_counts_as_a_question(text: str, question: bool) -> None:
    assert is_question(text, DEFAULT_QUESTION_WORDS) is question


@pytest.mark.parametrize(
    ("text", "stop"),
    [
        ("stop", True),
        ("Shut up", True),
        ("be   quiet please", True),
        ("Parlour, stop", True),  # the name aside
        ("go away parlour_bot", True),
        ("nobody asked", True),
        ("please stop talking now bot", True),  # five words
        ("how do I stop the timer?", False),  # six words: about something else
        ("unstoppable", False),
        ("a quietly done job", False),
        ("", False),
    ],
)
def test_what_counts_as_stop(text: str, stop: bool) -> None:
    assert says_stop(text, DEFAULT_STOP_PHRASES, NAMES) is stop


def test_stop_phrases_are_configurable_for_other_languages() -> None:
    german = ("hör auf", "sei still", "ruhe")
    assert says_stop("Parlour, hör auf!", german, NAMES)
    assert says_stop("RUHE", german)
    assert not says_stop("stop", german)


@given(st.text(max_size=80), st.sampled_from(NAMES))
def test_a_message_without_the_name_is_never_called_by_it(text: str, name: str) -> None:
    if not names_in(text, NAMES):
        assert not called_by_name(text, NAMES)
    assert called_by_name(f"{name}, {text}", NAMES)  # said first, before a pause


@given(st.text(max_size=200))
def test_long_messages_are_never_a_stop(text: str) -> None:
    words = text.split()
    if len(words) > 5 and all(w.isalpha() for w in words):
        assert not says_stop(text, DEFAULT_STOP_PHRASES)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_hourly_cap_is_a_sliding_hour() -> None:
    clock = Clock()
    limits = AmbientLimits(2, cooldown=60, follow_up=30, clock=clock)
    for _ in range(2):
        assert limits.refusal("c") is None
        limits.spend("c", None)
        limits.left("c")  # a message left between: not in a row
        clock.now += 600
    assert limits.refusal("c") is Reason.HOURLY_CAP
    clock.now = 3600.0  # the first is an hour old
    assert limits.refusal("c") is None
    assert limits.status("c").answers_this_hour == 1


def test_never_two_in_a_row_unless_it_was_addressed_between() -> None:
    limits = AmbientLimits(10, cooldown=60, follow_up=30, clock=Clock())
    limits.spend("c", "m1")
    assert limits.refusal("c") is Reason.IN_A_ROW
    limits.answered("c", "u1", "m1")  # the unprompted answer's own turn
    assert limits.refusal("c") is Reason.IN_A_ROW
    limits.answered("c", "u2", "m2")  # an addressed answer came between
    assert limits.refusal("c") is None
    assert limits.refusal("other chat") is None


def test_a_stop_silences_for_the_cool_down() -> None:
    clock = Clock()
    limits = AmbientLimits(10, cooldown=60, follow_up=30, clock=clock)
    limits.stop("c")
    assert limits.refusal("c") is Reason.COOLDOWN
    assert limits.status("c").cooldown_left == 60
    clock.now += 60
    assert limits.refusal("c") is None


def test_exchanges_last_follow_up_seconds() -> None:
    clock = Clock()
    limits = AmbientLimits(10, cooldown=60, follow_up=30, clock=clock)
    limits.answered("c", "alice", "m1")
    assert limits.in_exchange("c", "alice") and limits.of_exchange("c", "m1")
    assert not limits.in_exchange("c", "bob") and not limits.of_exchange("c", None)
    assert not limits.in_exchange("d", "alice")  # another chat
    clock.now += 31
    assert not limits.in_exchange("c", "alice") and not limits.of_exchange("c", "m1")


def test_memory_is_bounded() -> None:
    limits = AmbientLimits(10, cooldown=60, follow_up=30, clock=Clock(), max_chats=3)
    for n in range(10):
        limits.answered(f"chat {n}", "alice", str(n))
    assert len(limits) == 3
    for n in range(200):
        limits.answered("chat 9", f"user {n}", f"m{n}")
    assert limits.in_exchange("chat 9", "user 199") and not limits.in_exchange("chat 9", "user 0")


@pytest.mark.parametrize(
    ("answer", "probability"),
    [
        ("yes 0.8", 0.8),
        ("Yes, 0.95", 0.95),
        ("yes", 1.0),
        ("No.", 0.0),
        ("no 0.3", 0.3),
        ("no 0.9", 0.1),  # "surely not": a no never reaches one half
        ("yes 0.2", 0.8),  # a yes never falls below it
        ("85%", 0.85),
        ("yes 80", 0.8),
        ("0.4", 0.4),
        ("yesterday", None),
        ("I cannot say.", None),
        ("yes 150", None),
        ("", None),
    ],
)
def test_the_classifiers_answer(answer: str, probability: float | None) -> None:
    parsed = parse_answer(answer)
    assert parsed == (None if probability is None else pytest.approx(probability))


@given(st.text(max_size=40))
def test_any_answer_is_a_probability_or_none(answer: str) -> None:
    parsed = parse_answer(answer)
    assert parsed is None or 0.0 <= parsed <= 1.0
