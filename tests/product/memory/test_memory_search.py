"""The search maths of long-term memory (bot.memory.search): search forms and queries."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.memory.search import match_query, search_form


def test_search_form_bigrams_cjk_and_keeps_words() -> None:
    assert search_form("我对花生过敏") == "我对 对花 花生 生过 过敏"
    assert search_form("I'm ALLERGIC to 花生!") == "i m allergic to 花生"
    assert search_form("猫 が好き") == "猫 が好 好き"
    assert search_form("Ｃａｆé_bar 2024") == "café bar 2024"
    assert match_query("the AND of") is None
    assert match_query('NEAR( "x" *') == '"near" OR "x"'


@given(st.text())
def test_match_query_quotes_every_term(query: str) -> None:
    for term in (match_query(query) or '""').split(" OR "):
        assert term.startswith('"') and term.endswith('"') and '"' not in term[1:-1]
