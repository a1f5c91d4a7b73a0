"""A guard for the suite itself: every method of every storage protocol is called by some
conformance test, so a method added to a protocol arrives with the tests that define it."""

from __future__ import annotations

import re
from pathlib import Path

from bot.storage import Storage


def protocol_methods() -> set[str]:
    names: set[str] = set()
    for protocol in Storage.__mro__:
        if protocol.__module__.startswith("bot.storage"):
            names |= {n for n in vars(protocol) if not n.startswith("_") and n != "owner"}
    return names


def properties() -> set[str]:
    return {
        n
        for protocol in Storage.__mro__
        if protocol.__module__.startswith("bot.storage")
        for n, value in vars(protocol).items()
        if isinstance(value, property)
    }


def test_every_protocol_method_is_exercised() -> None:
    here = Path(__file__).parent
    source = "\n".join(p.read_text(encoding="utf-8") for p in here.glob("test_*.py"))
    called = set(re.findall(r"\.(\w+)\(", source))
    called |= {n for n in properties() if re.search(rf"\.{n}\b", source)}  # read, not called
    missing = protocol_methods() - called
    assert not missing, f"no conformance test calls {sorted(missing)}"
    assert {"begin_turn", "search_memories", "migrate_chat", "note_chat"} <= protocol_methods()
