"""The token counter's caches change no count and stay within their bounds (issue 15 §6: the
long texts of a window are found again without hashing their bytes every turn)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.llm import tokens
from bot.llm.tokens import PER_MESSAGE, REPLY_PRIMING, TokenCounter

_CHARS = st.characters(blacklist_categories=("Cs",))
_TEXT = st.one_of(st.text(_CHARS, max_size=60), st.text(_CHARS, min_size=129, max_size=400))


@settings(deadline=None, max_examples=60)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "system"]), _TEXT), max_size=12))
def test_cached_counts_equal_fresh_counts_in_any_order(pairs: list[tuple[str, str]]) -> None:
    counter = TokenCounter("gpt-4o-mini")
    fresh = TokenCounter("gpt-4o-mini")
    messages = [{"role": role, "content": text} for role, text in pairs]
    expected = REPLY_PRIMING + sum(
        PER_MESSAGE + fresh._count_uncached(role) + fresh._count_uncached(text)
        for role, text in pairs
    )
    for _ in range(3):  # first counts fill the caches, the next ones are served from them
        assert counter.count_messages(messages) == expected
        assert counter.count_messages(messages[::-1]) == expected
    for _, text in pairs:
        assert counter.count_text(text) == fresh._count_uncached(text)


def test_recent_long_texts_stay_within_their_character_budget() -> None:
    counter = TokenCounter("gpt-4o-mini")
    fresh = TokenCounter("gpt-4o-mini")
    texts = [f"{n} " + "a fairly long message about the garden " * 30 for n in range(3000)]
    counts = [counter.count_text(t) for t in texts]  # about 3.5 million characters in all
    assert counter.count_text(texts[-1]) == counts[-1] == fresh._count_uncached(texts[-1])
    held = counter._recent_long
    assert counter._recent_chars == sum(map(len, held)) <= tokens._RECENT_LONG_CHARS
    assert texts[-1] in held and texts[0] not in held  # the most recent are the ones kept
    # a text that left the recent ones is still counted exactly (by its digest, or afresh)
    assert counter.count_text(texts[0]) == counts[0] == fresh._count_uncached(texts[0])
    huge = "word " * (tokens._RECENT_LONG_CHARS // 16)
    assert counter.count_text(huge) == fresh._count_uncached(huge)
    assert huge not in held  # one huge text never takes a large share of the budget
