"""Tests for bot.llm.tokens and bot.llm.tiktoken_files: offline seeding, exact counts, the
fallback estimate, calibration."""

from __future__ import annotations

import gzip
import hashlib
import inspect
import logging
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load
import tiktoken.registry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiktoken_ext import openai_public

from bot.llm import tokens
from bot.llm.tiktoken_files import ENCODING_FILES, ensure_tiktoken_cache
from bot.llm.tokens import (
    PER_TOOL_CALL,
    TokenCounter,
    default_count_tokens,
    estimate_tokens,
    get_counter,
)
from bot.platform.media import UNKNOWN_IMAGE_TOKENS

Message = Mapping[str, Any]
# Hypothesis reuses our autouse fixture's state across examples; that is intended here.
PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="session")
def seeded_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiktoken-cache")


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, seeded_dir: Path) -> Iterator[None]:
    """A private cache dir, fresh module state, and any tiktoken download is an error."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(seeded_dir))
    monkeypatch.setattr(tokens, "_ENCODINGS", {})
    monkeypatch.setattr(tokens, "_COUNTERS", {})
    monkeypatch.setattr(tokens, "_warned", False)
    real_read_file = tiktoken.load.read_file

    def offline_read_file(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise AssertionError(f"tiktoken tried to download {blobpath}")
        return real_read_file(blobpath)

    monkeypatch.setattr(tiktoken.load, "read_file", offline_read_file)
    yield


@pytest.fixture
def estimating(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend both encodings failed to load (without the warning)."""
    monkeypatch.setattr(tokens, "_ENCODINGS", dict.fromkeys(ENCODING_FILES))


def encoding(name: str) -> tiktoken.Encoding:
    """tiktoken's own ``name``, read from the seeded cache (a counter seeds it only when it
    first counts, so a test that asks tiktoken first seeds it itself)."""
    assert ensure_tiktoken_cache()
    return tiktoken.get_encoding(name)


def cache_file(cache_dir: Path, name: str) -> Path:
    return cache_dir / hashlib.sha1(ENCODING_FILES[name][0].encode()).hexdigest()


# --- seeding tiktoken's cache -------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ENCODING_FILES))
def test_table_matches_tiktoken_source(name: str) -> None:
    source = inspect.getsource(getattr(openai_public, name))
    url = re.search(r'load_tiktoken_bpe\(\s*"([^"]+)"', source)
    sha256 = re.search(r'expected_hash="([0-9a-f]{64})"', source)
    assert url is not None and sha256 is not None
    assert ENCODING_FILES[name] == (url.group(1), sha256.group(1))


def test_seeded_cache_loads_both_encodings_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # force a load from the cache
    assert ensure_tiktoken_cache()
    for name, (_url, sha256) in ENCODING_FILES.items():
        assert hashlib.sha256(cache_file(tmp_path, name).read_bytes()).hexdigest() == sha256
        assert len(tiktoken.get_encoding(name).encode("hello world")) == 2
    expected = {cache_file(tmp_path, name).name for name in ENCODING_FILES}
    assert {p.name for p in tmp_path.iterdir()} == expected  # no temp files left behind


def test_offline_guard_catches_downloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without our seeding tiktoken would download: proves the guard above is real."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    with pytest.raises(AssertionError, match="tried to download"):
        tiktoken.get_encoding("cl100k_base")


def test_corrupt_cache_file_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    cache_file(tmp_path, "o200k_base").write_bytes(b"truncated")
    assert ensure_tiktoken_cache()
    data = cache_file(tmp_path, "o200k_base").read_bytes()
    assert hashlib.sha256(data).hexdigest() == ENCODING_FILES["o200k_base"][1]


@pytest.mark.parametrize("xdg", ["xdg", "relative/ignored"])
def test_default_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, xdg: str) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / xdg) if xdg == "xdg" else xdg)
    base = tmp_path / "xdg" if xdg == "xdg" else tmp_path / "home" / ".cache"
    assert ensure_tiktoken_cache()
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(base / "parlour" / "tiktoken")
    assert cache_file(base / "parlour" / "tiktoken", "cl100k_base").exists()


def test_data_gym_cache_dir_is_respected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path))
    assert ensure_tiktoken_cache()
    assert "TIKTOKEN_CACHE_DIR" not in os.environ
    assert cache_file(tmp_path, "o200k_base").exists()


def test_bad_bundled_data_falls_back_and_logs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(gzip, "decompress", lambda data: b"not the vocabulary")

    def never(name: str) -> Any:
        raise AssertionError("tiktoken must not load an unverified encoding")

    monkeypatch.setattr(tiktoken, "get_encoding", never)
    with caplog.at_level(logging.WARNING, logger="bot.llm.tokens"):
        for model in ("gpt-4o", "gpt-4", "llama3.1", "gpt-4o"):
            counter = get_counter(model)
            assert not counter.exact and counter.encoding_name is None
            assert counter.count_text("hello world") == estimate_tokens("hello world")
            assert counter.count_messages([{"role": "user", "content": "hi"}]) > 0
    assert not ensure_tiktoken_cache()
    assert list(tmp_path.iterdir()) == []
    records = [r for r in caplog.records if r.name == "bot.llm.tokens"]
    assert len(records) == 1
    assert "estimate" in records[0].getMessage() and "sha256" in records[0].getMessage()


@pytest.mark.parametrize("cache_dir", ["", None])
def test_unusable_cache_falls_back(monkeypatch: pytest.MonkeyPatch, cache_dir: str | None) -> None:
    if cache_dir is None:  # the installed tiktoken expects another file than we ship
        url, _ = ENCODING_FILES["o200k_base"]
        monkeypatch.setitem(ENCODING_FILES, "o200k_base", (url, "0" * 64))
    else:  # an empty TIKTOKEN_CACHE_DIR disables tiktoken's cache
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", cache_dir)
    counter = TokenCounter("gpt-4o")
    assert not counter.exact and counter.encoding_name is None
    assert not ensure_tiktoken_cache()


# --- exact counting -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "exact", "encoding"),
    [
        ("gpt-4o", True, "o200k_base"),
        ("gpt-4o-mini-2024-07-18", True, "o200k_base"),
        ("gpt-4.1-nano", True, "o200k_base"),
        ("gpt-5", True, "o200k_base"),
        ("gpt-5.1-chat", True, "o200k_base"),
        ("o1", True, "o200k_base"),
        ("o3-mini", True, "o200k_base"),
        ("o4-mini", True, "o200k_base"),
        ("openai/gpt-4o", True, "o200k_base"),
        ("gpt-4", True, "cl100k_base"),
        ("gpt-4-turbo", True, "cl100k_base"),
        ("gpt-3.5-turbo", True, "cl100k_base"),
        ("text-embedding-3-small", True, "cl100k_base"),
        ("llama3.1", False, "o200k_base"),
        ("qwen2.5:7b", False, "o200k_base"),
        ("deepseek-chat", False, "o200k_base"),
        ("gpt-oss:20b", False, "o200k_base"),
        ("o1x", False, "o200k_base"),
    ],
)
def test_model_resolution(model: str, exact: bool, encoding: str) -> None:
    counter = get_counter(model)
    assert (counter.exact, counter.encoding_name, counter.model) == (exact, encoding, model)


TEXTS = [
    "hello world",
    "",
    "Hello, 世界! こんにちは 안녕하세요 😀",
    "<|endoftext|> is text",
    "x" * 9,
]
EXACT = [("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base")]


@pytest.mark.parametrize(("model", "encoding_name"), EXACT)
def test_counts_match_tiktoken(model: str, encoding_name: str) -> None:
    counter = get_counter(model)
    enc = encoding(encoding_name)
    assert counter.count_text("hello world") == 2
    for text in TEXTS:
        assert counter.count_text(text) == len(enc.encode_ordinary(text))


def test_cookbook_overhead() -> None:
    counter = get_counter("gpt-4o")
    t = counter.count_text
    assert counter.count_messages([{"role": "user", "content": "hi"}]) == t("user") + t("hi") + 6
    assert counter.count_messages([{"role": "user", "content": "hi"}]) == 8
    named = {"role": "user", "name": "bob", "content": "hi"}
    assert counter.count_message(named) == 3 + t("user") + t("bob") + 1 + t("hi")
    assert counter.count_messages([]) == 3


def test_cookbook_example_counts() -> None:
    """The cookbook's example, whose counts it checked against the API (129 and 124)."""
    jargon = [
        ("system", None, "You are a helpful, pattern-following assistant that translates "
         "corporate jargon into plain English."),
        ("system", "example_user", "New synergies will help drive top-line growth."),
        ("system", "example_assistant", "Things working well together will increase revenue."),
        ("system", "example_user", "Let's circle back when we have more bandwidth to touch "
         "base on opportunities for increased leverage."),
        ("system", "example_assistant", "Let's talk later when we're less busy about how to do "
         "better."),
        ("user", None, "This late pivot means we don't have time to boil the ocean for the "
         "client deliverable."),
    ]  # fmt: skip
    messages = [
        {"role": role, "content": text} | ({"name": name} if name else {})
        for role, name, text in jargon
    ]
    assert get_counter("gpt-4").count_messages(messages) == 129
    assert get_counter("gpt-3.5-turbo").count_messages(messages) == 129
    assert get_counter("gpt-4o").count_messages(messages) == 124


def test_parts_tool_calls_and_tool_results() -> None:
    counter = get_counter("gpt-4o")
    t = counter.count_text
    parts = {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    }
    # "AAAA" is no image header: its size is unknown, so it costs the tile rule's worst case
    worst = UNKNOWN_IMAGE_TOKENS
    assert counter.count_message(parts) == 3 + t("user") + t("what is this?") + worst
    args = '{"city": "Paris"}'
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": args}}
        ],
    }
    expected = 3 + t("assistant") + t("weather") + t(args) + PER_TOOL_CALL
    assert counter.count_message(call) == expected
    result = {"role": "tool", "tool_call_id": "call_1", "content": "18C"}
    assert counter.count_message(result) == 3 + t("tool") + t("call_1") + t("18C")


texts = st.text(st.characters(codec="utf-8"), max_size=60)
parts = st.lists(
    st.one_of(
        st.builds(lambda s: {"type": "text", "text": s}, texts),
        st.just({"type": "image_url", "image_url": {"url": "https://example.invalid/x.png"}}),
    ),
    max_size=3,
)
messages = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["system", "user", "assistant", "tool"]),
            "content": st.one_of(st.none(), texts, parts),
        },
        optional={"name": st.from_regex(r"[a-z_]{1,12}", fullmatch=True)},
    ),
    max_size=5,
)


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4", "llama3.1"])
@PROPERTY
@given(a=messages, b=messages)
def test_count_messages_is_additive(model: str, a: list[Message], b: list[Message]) -> None:
    count = get_counter(model).count_messages
    assert count(a + b) == count(a) + count(b) - 3


@PROPERTY
@given(a=messages, b=messages)
def test_estimated_count_messages_is_additive(
    estimating: None, a: list[Message], b: list[Message]
) -> None:
    counter = TokenCounter("gpt-4o")
    assert counter.encoding_name is None
    count = counter.count_messages
    assert count(a + b) == count(a) + count(b) - 3


# --- the fallback estimate ----------------------------------------------------------------

WORDS = (
    "the of and to in is you that it he was for on are as with his they I at be this have from "
    "or one had by word but not what all were we when your can said there use an each which she "
    "do how their if will up other about out many then them these so some her would make like "
    "him into time has look two more write go see number no way could people my than first water "
    "been call who its now find long down day did get come made may part Hello bot token Python "
    "JSON API OpenAI GPT-4o llama3.1 internationalization asynchronous don't it's I'm we'll "
    "안녕하세요 감사합니다 사람 한국어 오늘 내일 학교 회사 컴퓨터 데이터 테스트 그리고 시간 "
    "привет мир как дела это тест работа время человек город 😀 😂 👍 🎉 🔥 ✨ 🙏"
)
HANZI = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学"
    "对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面"
    "公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部"
)
KANA = (
    "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをん"
    "がぎぐげござじずぜぞだでどばびぶべぼアイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘ"
    "ホマミムメモヤユヨラリルレロワヲンー"
)
unit = st.one_of(
    st.sampled_from(WORDS.split()),
    st.text(alphabet=HANZI, min_size=1, max_size=12),
    st.text(alphabet=KANA, min_size=1, max_size=8),
    st.sampled_from(list(".,!?;:-()\"'/…。、！？「」")),
    st.integers(0, 10**9).map(str),
)
prose = st.lists(
    st.tuples(unit, st.sampled_from([" ", "  ", "\n", "\n\n", ", ", ". "])), max_size=40
).map(lambda pairs: "".join(word + sep for word, sep in pairs))


@PROPERTY
@given(prose)
def test_estimate_never_undercounts_o200k(text: str) -> None:
    assert estimate_tokens(text) >= len(encoding("o200k_base").encode_ordinary(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("你好世界", 8),  # 2 per CJK char
        ("ぬヌ ", 5),  # rare kana are two tokens each in o200k_base (found by hypothesis)
        ("привет", 6),  # 1 per other non-ASCII char
        ("🎉", 3),
        ("abcdef", 2),  # 3 ASCII chars per token
        ("1, 2, 3, 4", 10),  # but at least one per pre-token piece
    ],
)
def test_estimate_examples(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_estimate_overcounts_real_text_modestly() -> None:
    text = inspect.getsource(tokens)  # code + English comments
    real = len(encoding("o200k_base").encode_ordinary(text))
    assert real <= estimate_tokens(text) <= 2 * real


# --- calibration --------------------------------------------------------------------------

LONG = [{"role": "user", "content": "please summarise the meeting notes from today " * 10}]


def converge(counter: TokenCounter, actual: Callable[[], int], rounds: int = 60) -> None:
    for _ in range(rounds):
        counter.observe(counter.count_messages(LONG), actual())


def test_calibration_moves_ratio_toward_actual() -> None:
    counter = get_counter("llama3.1")
    raw = counter.count_messages(LONG)
    counter.observe(raw, 2 * raw)
    assert 1.0 < counter.ratio < 2.0
    assert counter.count_messages(LONG) == math.ceil(raw * counter.ratio)
    converge(counter, lambda: 2 * raw)
    assert counter.ratio == pytest.approx(2.0, rel=0.02)
    assert counter.count_messages(LONG) == pytest.approx(2 * raw, rel=0.02)


def test_calibration_is_cautious_downwards_and_clamped() -> None:
    counter = TokenCounter("qwen2.5:7b")
    raw = counter.count_messages(LONG)
    for _ in range(3):  # warm-up: one-off small usages may not shrink counts
        counter.observe(counter.count_messages(LONG), raw // 2)
        assert counter.ratio == 1.0
    counter.observe(counter.count_messages(LONG), raw // 2)
    assert counter.ratio < 1.0
    converge(counter, lambda: raw // 10, rounds=200)
    assert counter.ratio == 0.5
    converge(counter, lambda: raw * 10)
    assert counter.ratio == 4.0
    counter.observe(0, 10)
    counter.observe(10, 0)
    assert counter.ratio == 4.0


def test_calibration_does_not_change_exact_counts() -> None:
    counter = get_counter("gpt-4o")
    before = counter.count_messages(LONG)
    converge(counter, lambda: 10 * before)
    assert counter.ratio == 1.0
    assert counter.count_messages(LONG) == before


def test_estimating_counter_is_calibrated(estimating: None) -> None:
    counter = TokenCounter("gpt-4o")
    raw = counter.count_messages(LONG)
    counter.observe(raw, 3 * raw)
    assert not counter.exact and counter.ratio > 1.0


# --- shared counters ----------------------------------------------------------------------


def test_get_counter_is_shared_and_default_uses_gpt_4o() -> None:
    with ThreadPoolExecutor(4) as pool:
        counters = list(pool.map(get_counter, ["deepseek-chat"] * 8))
    assert all(c is counters[0] for c in counters)
    assert get_counter("gpt-4o") is get_counter("gpt-4o")
    assert default_count_tokens(LONG) == get_counter("gpt-4o").count_messages(LONG)
