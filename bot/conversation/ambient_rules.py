"""Whether a group message not addressed to the bot is clearly meant for it: the text rules.

Pure functions over the message's text, the bot's names and the configured word lists
(``ambient:``), so a decision costs a few regular expressions. The rules:

* **its name**, without an @, said *to* it: "Parlour, ...", "hey Parlour", "thanks, Parlour",
  or in a message with a question mark ("does Parlour know?"). A name only talked about
  ("Parlour is down again", "I like Parlour") is not enough. Names match as whole words, in
  any case.
* **a question**: a question mark anywhere (``?``, ``？``, ``؟``), or a first word from
  ``ambient.question_words`` (after the bot's name, a greeting or "and", "so", "but").
* **stop**: a short message (at most :data:`STOP_WORDS` words besides the bot's names) holding
  one of ``ambient.stop_phrases``: "Parlour, stop", "shut up", "be quiet please".

Which of them lead to an answer, and the limits on top, are :mod:`bot.conversation.ambient`'s.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from enum import StrEnum

__all__ = [
    "STOP_WORDS",
    "Reason",
    "called_by_name",
    "is_question",
    "names_in",
    "says_stop",
]

STOP_WORDS = 5  # a longer message that holds "stop" is about something else
_QUESTION_MARKS = frozenset("?？؟")
# Words that open a message before what it says: a greeting, "and", "so" (English; the question
# mark and the name carry other languages).
_OPENERS = frozenset(
    {"hey", "hi", "hello", "hallo", "ok", "okay", "yo", "dear", "oh", "and", "so", "but"}
    | {"also", "then", "well", "please", "thanks", "thank"}
)
_WORD = re.compile(r"\w+(?:['’]\w+)?")
_VOCATIVE_AFTER = re.compile(r"^\s*(?:$|[,:;!?.…，、：；！？。])")
_VOCATIVE_BEFORE = re.compile(r"(?:^|[,;:!.…，、：；！。])\s*$")


class Reason(StrEnum):
    """Why ambient mode answered a message, or left it (a label of the decisions' metric)."""

    NAME = "name"  # said its name to it
    FOLLOW_UP = "follow_up"  # a question from someone it just answered
    REPLY = "reply"  # a question replying to a message of its exchange with someone
    CHATTER = "chatter"  # none of the rules: not meant for it
    STOP = "stop"  # told to stop: the cool-down starts
    COOLDOWN = "cooldown"  # within the cool-down after a stop
    IN_A_ROW = "in_a_row"  # it answered the message before unprompted
    HOURLY_CAP = "hourly_cap"  # ambient.max_per_hour reached
    BUDGET = "budget"  # a daily token budget is spent: no answer would come
    CLASSIFIER = "classifier"  # the classifier's yes fell short of the threshold
    CLASSIFIER_FAILED = "classifier_failed"  # no usable answer from the classifier


def names_in(text: str, names: Iterable[str]) -> bool:
    """Whether any of ``names`` appears in ``text`` as a whole word (any case)."""
    pattern = _names_pattern(_clean(names))
    return pattern is not None and pattern.search(text) is not None


def called_by_name(text: str, names: Iterable[str]) -> bool:
    """The bot's name said to it: at the start before a pause ("Parlour, ..."), after a
    greeting ("hey Parlour"), at the end after a pause ("thanks, Parlour"), or in a message
    with a question mark. Without a pause, "Parlour is down again" talks *about* it."""
    pattern = _names_pattern(_clean(names))
    if pattern is None:
        return False
    found = list(pattern.finditer(text))
    if not found:
        return False
    for match in found:
        before, after = text[: match.start()], text[match.end() :]
        words_before = _words(before)
        if not words_before and _VOCATIVE_AFTER.match(after):
            return True  # "Parlour, what time is it?", "Parlour!"
        if words_before and all(w in _OPENERS for w in words_before):
            return True  # "hey Parlour ..."
        if not _words(after) and _VOCATIVE_BEFORE.search(before):
            return True  # "..., Parlour"
    return any(mark in text for mark in _QUESTION_MARKS)


def is_question(text: str, question_words: Iterable[str]) -> bool:
    """A question mark anywhere, or a question word first (after openers like "and")."""
    if any(mark in text for mark in _QUESTION_MARKS):
        return True
    asking = {w.casefold() for w in question_words}
    for word in _words(text):
        if word in asking:
            return True
        if word not in _OPENERS:
            return False
    return False


def says_stop(text: str, phrases: Iterable[str], names: Iterable[str] = ()) -> bool:
    """A short message (the bot's names aside) that holds one of ``phrases``."""
    pattern = _names_pattern(_clean(names))
    rest = pattern.sub(" ", text) if pattern is not None else text
    if len(_words(rest)) > STOP_WORDS:
        return False
    stop = _phrases_pattern(_clean(phrases))
    return stop is not None and stop.search(rest) is not None


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _clean(words: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({" ".join(w.split()) for w in words if w.strip()}))


@functools.lru_cache(maxsize=64)
def _names_pattern(names: tuple[str, ...]) -> re.Pattern[str] | None:
    return _phrases_pattern(tuple(n.lstrip("@") for n in names if len(n.lstrip("@")) >= 2))


@functools.lru_cache(maxsize=64)
def _phrases_pattern(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    """Whole words or phrases (any whitespace between words), longest first, any case."""
    if not phrases:
        return None
    ordered = sorted(phrases, key=len, reverse=True)
    body = "|".join(r"\s+".join(map(re.escape, p.split())) for p in ordered)
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)
