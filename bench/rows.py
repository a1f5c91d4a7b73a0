"""The bench table's rows, section by section, and the targets each figure is checked
against (a row with a target passes or fails; the others are reference figures)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.common import Row, fmt_count, fmt_ms
from bench.concurrency import Burst
from bench.memory import (
    HISTORY_BUDGET,
    SAMPLE_TURNS,
    TRIMMED_BUDGET,
    EmbeddingFailure,
    MemoryFigures,
    RetentionFigures,
    TrimmedFigures,
)
from bench.replicas import LATENCY as REPLICA_LATENCY
from bench.replicas import MESSAGES as REPLICA_MESSAGES
from bench.replicas import ReplicaFigures
from bench.telegram import TelegramFigures
from bench.turns import TurnFigures
from bench.window import WindowFigures

RATIO_TARGET = 1.5  # ChatService.chat per turn <= this x the bare client.post round trip
FANOUT_TARGET = 2.0  # seconds for 1,000 conversations at once with a 1 s model
FLAT_TARGET = 1.5  # load_window at any size <= this x its time at 10^3 stored messages
LATENCY = 1.0  # the fake model's latency in section 2
FANOUT = 1000
ORDERED_CONVERSATIONS, ORDERED_MESSAGES = 100, 10

S1 = "1. Per-turn cost vs floor"
S2 = "2. Many conversations at once"
S3 = "3. Window load vs stored size"
S4 = "4. Memory"
S5 = "5. Telegram"
RENDER_TARGET = 0.1  # seconds to render and split a 10,000-character reply
S6 = "6. Long-term memory"
RETENTION_TARGET = 0.95  # share of questions whose prompt carries the fact asked about
MISSES_SHOWN = 8  # a row names at most this many of the facts it missed
SEARCH_P95_TARGET = 0.005  # seconds, MemoryStore.search at 10^5 memories
EMBEDDING_MODEL = "text-embedding-3-small"  # section 6 with embeddings, on the fake
S8 = "8. Two replicas, one PostgreSQL"
S9 = "9. Prompt cache"
S16 = "16. Group chats"


@dataclass(frozen=True, slots=True)
class Concurrency:
    in_process: Burst
    child: Burst
    floor: Burst
    floor_httpx: Burst
    floor_raw: Burst
    ordered: Burst


def turn_rows(figures: Sequence[TurnFigures]) -> list[Row]:
    rows: list[Row] = []
    for f in figures:
        size = fmt_count(f.stored_messages)
        rows += [
            Row(
                S1,
                f"`ChatService.chat`, {f.backend}, {size} stored messages"
                f" ({f.window_messages}-message request)",
                f"{fmt_ms(f.service_s)}/turn",
            ),
            Row(S1, "floor: same body, same client, `client.post`", f"{fmt_ms(f.floor_s)}/turn"),
            Row(
                S1,
                f"ratio chat / floor, {f.backend}, {size}",
                f"{f.ratio:.2f}x",
                f"<= {RATIO_TARGET}x",
                f.ratio <= RATIO_TARGET,
            ),
            Row(
                S1,
                "reference: `client.chat.completions.create(**body)`",
                f"{fmt_ms(f.create_s)}/turn",
            ),
        ]
        if f.wrong_replies:
            rows.append(Row(S1, "wrong replies", str(f.wrong_replies), "0", False))
    return rows


def _burst_check(burst: Burst, what: str, section: str = S2) -> Row:
    figure = f"{burst.correct}/{burst.calls}"
    if burst.errors:
        figure += f" ({burst.errors} errors, first: {burst.first_error})"
    return Row(section, what, figure, f"{burst.calls}/{burst.calls}", burst.correct == burst.calls)


def _floor_row(burst: Burst, what: str) -> Row:
    figure = f"{burst.wall:.2f} s"
    if burst.correct != burst.calls:
        figure += f" ({burst.calls - burst.correct} wrong or failed)"
    return Row(S2, what + ", fake in its own process", figure)


def concurrency_rows(c: Concurrency) -> list[Row]:
    floor_s = ORDERED_MESSAGES * LATENCY
    n = f"{FANOUT:,}"
    return [
        Row(
            S2,
            f"{n} private chats x 1 message at once, {LATENCY:g} s model, fake in this process",
            f"{c.in_process.wall:.2f} s",
            f"<= {FANOUT_TARGET:g} s",
            c.in_process.wall <= FANOUT_TARGET,
        ),
        _burst_check(c.in_process, "replies in call order, each its own echo"),
        Row(
            S2,
            "same, fake in its own process (like a real model server)",
            f"{c.child.wall:.2f} s",
            f"<= {FANOUT_TARGET:g} s",
            c.child.wall <= FANOUT_TARGET,
        ),
        _burst_check(c.child, "replies in call order, each its own echo"),
        _floor_row(c.floor, f"reference: {n} bare `client.post` at once, the service's client"),
        _floor_row(c.floor_httpx, "reference: same, SDK client on its default httpx transport"),
        _floor_row(c.floor_raw, "reference: same bodies, no SDK (one plain aiohttp session)"),
        Row(
            S2,
            f"{ORDERED_CONVERSATIONS} chats x {ORDERED_MESSAGES} messages at once"
            f" (floor {floor_s:g} s: {ORDERED_MESSAGES} model calls in a row)",
            f"{c.ordered.wall:.2f} s",
        ),
        Row(
            S2,
            "conversations whose stored turns are in the order sent",
            f"{c.ordered.in_order}/{ORDERED_CONVERSATIONS}",
            f"{ORDERED_CONVERSATIONS}/{ORDERED_CONVERSATIONS}",
            c.ordered.in_order == ORDERED_CONVERSATIONS,
        ),
        _burst_check(c.ordered, "replies each its own echo"),
    ]


def window_rows(figures: Sequence[WindowFigures]) -> list[Row]:
    base = figures[0]
    rows: list[Row] = []
    for f in figures:
        source = "in-memory window" if f.cached else f"from {f.backend}"
        case = (
            f"`load_window(key, 50)` {source}, {fmt_count(f.stored_messages)} stored messages"
            f" ({f.turns} turns, {f.messages} messages back)"
        )
        if f is base:
            rows.append(Row(S3, case, fmt_ms(f.mean)))
        else:
            ratio = f.mean / base.mean
            rows.append(
                Row(
                    S3,
                    case,
                    f"{fmt_ms(f.mean)} ({ratio:.2f}x)",
                    f"<= {FLAT_TARGET}x the {fmt_count(base.stored_messages)} figure",
                    ratio <= FLAT_TARGET,
                )
            )
    return rows


def telegram_rows(t: TelegramFigures) -> list[Row]:
    return [
        Row(
            S5,
            f"Markdown -> Telegram HTML + split, {t.reply_chars:,}-char reply"
            f" ({t.chunks} messages)",
            fmt_ms(t.render_s),
            f"<= {RENDER_TARGET * 1000:g} ms",
            t.render_s <= RENDER_TARGET,
        ),
        Row(
            S5,
            f"{t.chats} private chats x 1 message at once, end to end (aiogram polling the fake"
            " Bot API, streamed reply, 0 s model)",
            f"{t.burst_s:.2f} s",
        ),
        Row(
            S5,
            "chats answered",
            f"{t.delivered}/{t.chats}",
            f"{t.chats}/{t.chats}",
            t.delivered == t.chats,
        ),
    ]


def _retention_rows(r: RetentionFigures, how: str) -> list[Row]:
    case = (
        f"facts recalled {how}: {r.questions} facts said in turns 1-{r.questions},"
        f" {len(r.prompt_tokens) - 2 * r.questions} chit-chat turns, then a question per fact;"
        " prompts carrying the fact"
    )
    if r.missed:
        case += f" (missed: {', '.join(r.missed)})"
    return [
        Row(
            S6,
            case,
            f"{r.carried}/{r.questions} ({r.share:.0%})",
            f">= {RETENTION_TARGET:.0%}",
            r.share >= RETENTION_TARGET,
        )
    ]


def _trimmed_rows(t: TrimmedFigures) -> list[Row]:
    trimmed = t.questions - t.still_sent
    case = (
        f"recall of facts trimmed by the token budget: {t.questions} facts, then long turns"
        f" (`history.max_tokens` {TRIMMED_BUDGET:,}; all {t.loaded_turns} turns within"
        f" `history.max_turns` {t.max_turns}), then a question per fact; recalled blocks"
        " carrying the fact"
    )
    if t.still_sent:
        case += f" ({t.still_sent} still in the history sent, not counted)"
    if t.missed:
        shown = ", ".join(t.missed[:MISSES_SHOWN])
        more = len(t.missed) - MISSES_SHOWN
        case += f" (missed: {shown}{f' and {more} more' if more > 0 else ''})"
    return [
        Row(
            S6,
            case,
            f"{t.recalled}/{trimmed} ({t.share:.0%})",
            f">= {RETENTION_TARGET:.0%}",
            t.share >= RETENTION_TARGET,
        )
    ]


def memory_rows(m: MemoryFigures) -> list[Row]:
    r, s = m.retention, m.search
    sampled = [r.prompt_tokens[t - 1] for t in SAMPLE_TURNS if t <= len(r.prompt_tokens)]
    steady = sorted(r.prompt_tokens[SAMPLE_TURNS[1] - 1 :])
    rows = _retention_rows(r, "by FTS")
    if isinstance(m.with_embeddings, EmbeddingFailure):
        rows.append(Row(S6, "same, `memory.embeddings.model` set", m.with_embeddings.error))
    elif m.with_embeddings is not None:
        e = m.with_embeddings
        rows += _retention_rows(e, f"with embeddings ({EMBEDDING_MODEL} on the fake)")
        if not e.embedding_requests:
            rows.append(Row(S6, "`/embeddings` requests in that run", "0 (not wired in yet)"))
    if m.trimmed is not None:
        rows += _trimmed_rows(m.trimmed)
    rows += [
        Row(
            S6,
            "prompt tokens at turns " + ", ".join(str(t) for t in SAMPLE_TURNS),
            " / ".join(f"{n:,}" for n in sampled),
        ),
        Row(
            S6,
            f"prompt tokens per turn, turns {SAMPLE_TURNS[1]}-{len(r.prompt_tokens)}:"
            " min / median / max",
            f"{steady[0]:,} / {steady[len(steady) // 2]:,} / {steady[-1]:,}",
            "flat",
        ),
        Row(
            S6,
            f"history part of the prompt, largest of all turns (`history.max_tokens`"
            f" {HISTORY_BUDGET:,})",
            f"{max(r.history_tokens):,}",
            f"<= {HISTORY_BUDGET:,}",
            max(r.history_tokens) <= HISTORY_BUDGET,
        ),
        Row(
            S6,
            f"`MemoryStore.search` p50, {fmt_count(s.memories)} memories over {s.chats:,}"
            f" private chats ({s.calls} searches)",
            fmt_ms(s.p50_s),
        ),
        Row(
            S6,
            "`MemoryStore.search` p95, same",
            fmt_ms(s.p95_s),
            f"<= {SEARCH_P95_TARGET * 1000:g} ms",
            s.p95_s <= SEARCH_P95_TARGET,
        ),
        Row(S6, "searches that found at least one memory", f"{s.hit_share:.0%}"),
    ]
    return rows


def replica_rows(r: ReplicaFigures) -> list[Row]:
    fan, hop = r.fan_out, r.hopping
    chats = fan.calls
    floor = REPLICA_MESSAGES * REPLICA_LATENCY
    return [
        Row(
            S8,
            f"{chats:,} private chats x 1 message at once, chat c on replica c % 2,"
            f" {REPLICA_LATENCY:g} s model in its own process",
            f"{fan.wall:.2f} s",
            f"<= {FANOUT_TARGET:g} s",
            fan.wall <= FANOUT_TARGET,
        ),
        _burst_check(fan, "replies each its own echo", S8),
        Row(
            S8,
            f"then {REPLICA_MESSAGES} more each, one at a time per chat, message m on replica"
            f" (c + m) % 2, all chats at once (floor {floor:g} s)",
            f"{hop.wall:.2f} s",
        ),
        _burst_check(hop, "replies each its own echo", S8),
        Row(
            S8,
            "chats whose stored turns are in the order sent, read through the other replica,"
            " and whose windows agree on both",
            f"{hop.in_order}/{chats}",
            f"{chats}/{chats}",
            hop.in_order == chats,
        ),
        Row(S8, "turns answered by each replica", f"{r.per_replica[0]:,} / {r.per_replica[1]:,}"),
    ]


def buffer_rows(buffers: Mapping[int, int]) -> list[Row]:
    """PostgreSQL's own count of the pages one window load touches, at every size."""
    if not buffers:
        return []
    sizes = sorted(buffers)
    base = buffers[sizes[0]]
    worst = max(buffers.values())
    return [
        Row(
            S3,
            "PostgreSQL shared buffers one `load_window` touches (EXPLAIN ANALYZE BUFFERS) at "
            + " / ".join(fmt_count(size) for size in sizes),
            " / ".join(str(buffers[size]) for size in sizes),
            f"<= {FLAT_TARGET}x the {fmt_count(sizes[0])} figure",
            worst <= FLAT_TARGET * base,
        )
    ]
