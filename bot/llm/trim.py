"""Trim a chat history to fit a model's window: a pure function over OpenAI-format messages.

``trim_history`` takes OpenAI chat-format message dicts (roles ``system``, ``developer``,
``user``, ``assistant``, ``tool``) and returns a new, shorter list that is still valid to
send to a chat-completions API. Its rules, in order:

* **System block.** The consecutive ``system``/``developer`` messages at the very start are
  always kept. A ``system`` message later in the history is an ordinary part of its turn.
* **Repair.** Broken tool groups (e.g. left by a crash) are fixed first. A tool group is an
  ``assistant`` message with ``tool_calls`` plus the ``tool`` messages *directly* after it.
  ``tool`` messages that do not answer a call of that assistant message (or repeat an
  answered id) are orphans and dropped. If some call of the assistant message has no result,
  its partial results are dropped, and so is the assistant message itself, unless its
  ``content`` is non-empty: then it is kept as a plain answer with ``tool_calls`` removed.
  An empty ``tool_calls`` list is removed from an assistant message.
* **Turns.** The rest is split into turns: each ``user`` message starts one, running up to
  the next ``user`` message. Messages before the first ``user`` message form a partial
  leading turn, which is the oldest turn and so the first dropped.
* **Limits.** Whole turns are dropped oldest first, so the result is always the system block
  plus a chronological suffix of the (repaired) turns. The newest turn is always kept, even
  when ``max_turns=0`` or it alone has more than ``max_messages`` messages.

With no limits, the repaired history is returned. The input is never mutated; the result
holds shallow copies of the input dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bot.errors import ContextTooLongError

__all__ = ["trim_history"]

_SYSTEM_ROLES = frozenset({"system", "developer"})

_Message = dict[str, Any]


def trim_history(
    messages: Sequence[Mapping[str, Any]],
    *,
    max_tokens: int | None = None,
    max_turns: int | None = None,
    max_messages: int | None = None,
    count_tokens: Callable[[list[dict[str, Any]]], int] | None = None,
) -> list[dict[str, Any]]:
    """Return the newest whole turns of ``messages`` that fit every given limit.

    Args:
        messages: OpenAI chat-format message dicts, oldest first. Not modified.
        max_tokens: keep ``count_tokens(result) <= max_tokens``.
        max_turns: keep at most this many turns (the newest turn counts as one).
        max_messages: keep at most this many non-system messages, in whole turns.
        count_tokens: counts the tokens of a whole message list. Defaults to
            ``bot.llm.tokens.default_count_tokens``. Only used when ``max_tokens`` is given.

    Returns:
        A new list: the leading system/developer block followed by the newest turns that
        fit, in chronological order, with broken tool groups repaired (see the module
        docstring). The newest turn (the one holding the last ``user`` message, or the
        partial leading turn if there is no ``user`` message) is always included.

    Raises:
        ContextTooLongError: the system block plus the newest turn alone exceed
            ``max_tokens``; ``needed`` is their token count, ``budget`` is ``max_tokens``.
        ValueError: a limit is negative.

    With ``max_tokens`` alone, the whole (repaired) list is counted first and returned when it
    fits. Otherwise each turn is counted once, as ``count_tokens(turn) - count_tokens([])``;
    these costs are summed newest first on top of the system block's count to pick the turns.
    The chosen list is then counted as a whole, and while it is still over budget its oldest
    turn is dropped and it is recounted, so the budget holds exactly even for a counter that
    is not perfectly additive.
    """
    for name, limit in (
        ("max_tokens", max_tokens),
        ("max_turns", max_turns),
        ("max_messages", max_messages),
    ):
        if limit is not None and limit < 0:
            raise ValueError(f"{name} must be >= 0, got {limit}")

    head = 0
    while head < len(messages) and messages[head].get("role") in _SYSTEM_ROLES:
        head += 1
    system = [dict(m) for m in messages[:head]]
    repaired = _repair(messages[head:])

    counter = count_tokens
    if max_tokens is not None and counter is None:
        from bot.llm.tokens import default_count_tokens

        counter = default_count_tokens

    if max_turns is None and max_messages is None:
        # Most prompts fit whole (the window was placed to fit: bot.prompt.window): one count.
        everything = system + repaired
        if max_tokens is None or counter is None or counter(everything) <= max_tokens:
            return everything

    turns = _split_turns(repaired)
    keep = 1 if turns else 0
    empty = tokens = 0
    if turns:
        used = _non_system(turns[-1])
        if max_tokens is not None and counter is not None:
            empty = counter([])
            tokens = counter(system) + counter(turns[-1]) - empty
        for turn in reversed(turns[:-1]):
            if max_turns is not None and keep >= max_turns:
                break
            used += _non_system(turn)
            if max_messages is not None and used > max_messages:
                break
            if max_tokens is not None and counter is not None:
                tokens += counter(turn) - empty
                if tokens > max_tokens:
                    break
            keep += 1

    kept = turns[len(turns) - keep :]
    result = system + [m for turn in kept for m in turn]
    if max_tokens is not None and counter is not None:
        total = counter(result)
        for oldest in kept[:-1]:  # drop the oldest kept turn while still over budget
            if total <= max_tokens:
                break
            del result[len(system) : len(system) + len(oldest)]
            total = counter(result)
        if total > max_tokens:
            raise ContextTooLongError(needed=total, budget=max_tokens)
    return result


def _non_system(turn: list[_Message]) -> int:
    return len([m for m in turn if m.get("role") not in _SYSTEM_ROLES])


def _split_turns(messages: list[_Message]) -> list[list[_Message]]:
    """Group messages into turns, each starting at a ``user`` message (the first may not)."""
    turns: list[list[_Message]] = []
    turn: list[_Message] = []
    for message in messages:
        if message.get("role") == "user" or not turns:
            turns.append(turn := [message])
        else:
            turn.append(message)
    return turns


def _has_content(content: object) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    return bool(content)


def _repair(messages: Sequence[Mapping[str, Any]]) -> list[_Message]:
    """Copy ``messages``, dropping orphan tool results and incomplete tool-call groups."""
    if not [m for m in messages if m.get("role") == "tool" or "tool_calls" in m]:
        return [dict(m) for m in messages]  # no tool group at all: nothing to repair
    out: list[_Message] = []
    i = 0
    while i < len(messages):
        message = dict(messages[i])
        i += 1
        role = message.get("role")
        if role == "tool":
            continue  # orphan: not directly after an assistant message that called it
        if role != "assistant" or not message.get("tool_calls"):
            if role == "assistant" and message.get("tool_calls") == []:
                del message["tool_calls"]
            out.append(message)
            continue
        wanted = {c.get("id") if isinstance(c, Mapping) else None for c in message["tool_calls"]}
        answered: set[Any] = set()
        results: list[_Message] = []
        while i < len(messages) and messages[i].get("role") == "tool":
            call_id = messages[i].get("tool_call_id")
            if call_id is not None and call_id in wanted and call_id not in answered:
                answered.add(call_id)
                results.append(dict(messages[i]))
            i += 1
        if answered == wanted:
            out.append(message)
            out.extend(results)
        elif _has_content(message.get("content")):
            del message["tool_calls"]
            out.append(message)
    return out
