"""``python -m bench``: Parlour's performance table (``make bench``).

Sections: 1. per-turn cost of ``ChatService.chat`` against the bare SDK round trip (with the fake in
this process, then in its own: ``python -m bench.floor``, which also profiles); 2. a burst of 1,000
conversations at once, and ordering under load; 3. window load time against stored size; 4. peak
RSS; 5. the Telegram path (rendering a long reply, a burst of chats through the real adapter and the
fake Bot API); 6. long-term memory (facts recalled after 200 turns, prompt size across a
conversation, search time at 10^5 memories); 7. RSS after 10^3 / 10^4 / 10^5 distinct chats; 8.
1,000 conversations across two replicas on one PostgreSQL database; 9. how much of each prompt a
provider's prefix cache can reuse over long console conversations (alone: ``python -m
bench.prompt_cache``); 10. MCP tools: start, call latency over stdio and HTTP, crash to tools back
(alone: ``python -m bench.mcp``); 11. the HTTP API: a turn through the OpenAI-compatible endpoint
against one made directly, the chats list (alone: ``python -m bench.http_api``); 12. start-up:
``--help``, ``check-config``, ``history list``, ``usage``, and ``run`` to its first Telegram poll,
beside the import time of the libraries (alone: ``python -m bench.startup``); 13. bursts of 200 and
1,000 private Telegram chats at a 1 s model, Parlour against a bare aiohttp loop doing the same
protocol work, interleaved (alone: ``python -m bench.burst``); 14. recall on LoCoMo, public
conversations with annotated evidence, against two BM25 baselines (alone, with variants: ``python
-m bench.recall_public``; the data is fetched once into a cache, see ``bench.locomo``); 15.
knowledge bases: whether the passage holding the answer reaches the prompt on SQuAD v1.1 dev,
against plain BM25, documents added per second, search time at 10^4 and 10^5 chunks (alone:
``python -m bench.knowledge``; the data is fetched once into a cache, see ``bench.squad``); 16.
group chats: what a burst, a 1,000-message flood and a catch-up of 1,000 messages cost in model
calls and tokens (alone: ``python -m bench.group_chats``).
Sections 1, 3 and 7 run on SQLite
and, given a server (``--pg-url``, else ``PARLOUR_TEST_PG_URL``), on PostgreSQL too; section 8
needs one, section 13 runs its two-replica rows on it, section 15 its speed rows. Targets are
printed next to the figures; nothing asserts. ``--quick`` skips the 10^6- and 10^7-message
databases and the 10^5-chat run,
``--skip-memory`` section 6, ``--skip-prompt-cache`` section 9, ``--skip-mcp`` section 10,
``--skip-http`` section 11, ``--skip-startup`` section 12, ``--skip-burst`` section 13,
``--skip-recall`` section 14, ``--skip-knowledge`` section 15 (``--quick``: 2,000 questions,
10^4 chunks only), ``--skip-group`` section 16. Progress
goes to stderr only when it is a terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.burst import measure_burst
from bench.burst_rows import Pair, burst_rows
from bench.common import Row, fake_in_child, raise_fd_limit
from bench.concurrency import fan_out, ordered, sdk_floor
from bench.floor import FloorFigures, floor_rows, measure_floor
from bench.group_chats import Cost as GroupCost
from bench.group_chats import group_chat_rows, measure_group_chats
from bench.http_api import HTTPFigures, http_rows, measure_http
from bench.knowledge import KnowledgeFigures, knowledge_rows, measure_knowledge
from bench.mcp import MCPFigures, mcp_rows, measure_mcp
from bench.memory import (
    MemoryFigures,
    embeddings_configurable,
    measure_memory,
)
from bench.pg import PG_URL_ENV
from bench.prompt_cache import CacheFigures, measure_prompt_cache, prompt_cache_rows
from bench.recall_public import measure_public_recall
from bench.replicas import CONVERSATIONS as REPLICA_CONVERSATIONS
from bench.replicas import ReplicaFigures, measure_replicas
from bench.rows import (
    EMBEDDING_MODEL,
    FANOUT,
    LATENCY,
    ORDERED_CONVERSATIONS,
    ORDERED_MESSAGES,
    S4,
    Concurrency,
    buffer_rows,
    concurrency_rows,
    memory_rows,
    replica_rows,
    telegram_rows,
    turn_rows,
    window_rows,
)
from bench.rss import CHECKPOINTS as RSS_CHECKPOINTS
from bench.rss import mib, rss_rows, run_backends
from bench.startup import StartupFigures, measure_startup, startup_rows
from bench.storage_scale import measure_scale
from bench.table import machine_line, render
from bench.telegram import measure_telegram
from bot.testing.fake_llm import FakeLLM

TELEGRAM_CHATS = 200  # section 5: private chats in the end-to-end burst


def _progress(message: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"bench: {message}\n")
        sys.stderr.flush()


async def _concurrency(root: Path) -> Concurrency:
    async with FakeLLM(latency=LATENCY) as fake:
        _progress(f"{FANOUT} conversations at once, fake in this process")
        in_process = await fan_out(fake.base_url, root / "fan-out.db", FANOUT)
        fake.requests.clear()
        _progress(f"{ORDERED_CONVERSATIONS} x {ORDERED_MESSAGES} messages at once")
        in_order = await ordered(
            fake.base_url, root / "ordered.db", ORDERED_CONVERSATIONS, ORDERED_MESSAGES
        )
        fake.requests.clear()
    async with fake_in_child(LATENCY) as url:
        _progress(f"{FANOUT} conversations at once, fake in its own process")
        child = await fan_out(url, root / "fan-out-child.db", FANOUT)
        _progress(f"{FANOUT} bare client.post at once, fake in its own process")
        floor = await sdk_floor(url, root / "floor.db", FANOUT)
        _progress(f"{FANOUT} bare client.post at once, SDK on its httpx transport")
        floor_httpx = await sdk_floor(url, root / "floor-httpx.db", FANOUT, transport="httpx")
        _progress(f"{FANOUT} bare aiohttp posts at once, no SDK")
        floor_raw = await sdk_floor(url, root / "floor-raw.db", FANOUT, transport="aiohttp-raw")
    return Concurrency(in_process, child, floor, floor_httpx, floor_raw, in_order)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="no 10^6 or 10^7 database, no 10^5-chat run"
    )
    parser.add_argument(
        "--skip-memory", action="store_true", help="skip section 6 (seeding takes about a minute)"
    )
    parser.add_argument(
        "--skip-prompt-cache", action="store_true", help="skip section 9 (about 10 s)"
    )
    parser.add_argument("--skip-mcp", action="store_true", help="skip section 10 (about 15 s)")
    parser.add_argument("--skip-http", action="store_true", help="skip section 11 (the HTTP API)")
    parser.add_argument(
        "--skip-startup", action="store_true", help="skip section 12 (start-up, about a minute)"
    )
    parser.add_argument(
        "--skip-burst", action="store_true", help="skip section 13 (bursts, about 8 minutes)"
    )
    parser.add_argument(
        "--skip-recall", action="store_true", help="skip section 14 (LoCoMo, about 15 s)"
    )
    parser.add_argument(
        "--skip-knowledge",
        action="store_true",
        help="skip section 15 (knowledge bases, 3-15 minutes)",
    )
    parser.add_argument(
        "--skip-group",
        action="store_true",
        help="skip section 16 (group chats: bursts, a flood, catch-up; about 30 s)",
    )
    parser.add_argument(
        "--pg-url",
        default=os.environ.get(PG_URL_ENV) or None,
        help=f"a PostgreSQL server for the PostgreSQL figures (default: ${PG_URL_ENV})",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger().setLevel(logging.WARNING)
    raise_fd_limit()
    started = time.perf_counter()

    sizes = [10**3, 10**4, 10**5] + ([] if args.quick else [10**6, 10**7])
    turn_sizes = {10**3} if args.quick else {10**3, 10**6}
    with tempfile.TemporaryDirectory(prefix="parlour-bench-") as tmp:
        root = Path(tmp)
        scale = measure_scale(root, args.pg_url, sizes, turn_sizes)
        _progress("per-turn floor with the fake in its own process")
        floor: FloorFigures = asyncio.run(measure_floor(root))
        concurrency = asyncio.run(_concurrency(root))
        _progress("telegram: rendering and a burst of chats")
        telegram = asyncio.run(measure_telegram(root, TELEGRAM_CHATS))
        memory: MemoryFigures | None = None
        if not args.skip_memory:
            _progress("memory: 10^5 memories seeding beside the fact-recall conversation")
            model = EMBEDDING_MODEL if embeddings_configurable() else None
            memory = asyncio.run(measure_memory(root, embeddings_model=model))
        prompt_cache: list[CacheFigures] = []
        if not args.skip_prompt_cache:
            _progress("prompt cache: long console conversations, prefix shares")
            prompt_cache = asyncio.run(measure_prompt_cache(root))
        mcp: MCPFigures | None = None
        if not args.skip_mcp:
            _progress("mcp: the demo server over stdio and HTTP")
            mcp = asyncio.run(measure_mcp(root))
        http: HTTPFigures | None = None
        if not args.skip_http:
            _progress("http: the OpenAI-compatible endpoint and the chats list")
            http = asyncio.run(measure_http(root))
        startup: StartupFigures | None = None
        if not args.skip_startup:
            _progress("start-up: fresh processes for --help, check-config, history, run")
            startup = asyncio.run(measure_startup(root))
        burst: list[Pair] = []
        if not args.skip_burst:
            _progress("burst: Telegram chats at once, Parlour against the protocol floor")
            burst = asyncio.run(measure_burst(root, args.pg_url, progress=_progress))
        recall: list[Row] = []
        if not args.skip_recall:
            _progress("recall on LoCoMo: the defaults and two baselines")
            recall = asyncio.run(measure_public_recall(root))
        knowledge: KnowledgeFigures | None = None
        if not args.skip_knowledge:
            _progress("knowledge bases: SQuAD retrieval, ingestion, search latency")
            knowledge = asyncio.run(measure_knowledge(root, args.pg_url, quick=args.quick))
        group: dict[str, GroupCost] | None = None
        if not args.skip_group:
            _progress("group chats: bursts, a flood, a catch-up of 1,000 messages")
            group = asyncio.run(measure_group_chats(root))
    _progress("RSS against distinct chats, one fresh process per backend")
    rss = run_backends(args.pg_url, RSS_CHECKPOINTS[:2] if args.quick else RSS_CHECKPOINTS)
    replicas: ReplicaFigures | None = None
    if args.pg_url:
        _progress(f"{REPLICA_CONVERSATIONS:,} conversations across two replicas")
        replicas = asyncio.run(measure_replicas(args.pg_url))

    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    rows = [
        *turn_rows(scale.turns),
        *floor_rows(floor),
        *concurrency_rows(concurrency),
        *(row for windows in scale.windows for row in window_rows(windows)),
        *buffer_rows(scale.pg_buffers),
        Row(S4, "peak RSS of the bench process (bot, in-process fake, everything above)", mib(own)),
        Row(S4, "peak RSS of the largest child (seeder or out-of-process fake)", mib(children)),
        *telegram_rows(telegram),
        *(memory_rows(memory) if memory is not None else []),
        *rss_rows(rss),
        *(replica_rows(replicas) if replicas is not None else []),
        *prompt_cache_rows(prompt_cache),
        *(mcp_rows(mcp) if mcp is not None else []),
        *(http_rows(http) if http is not None else []),
        *(startup_rows(startup) if startup is not None else []),
        *burst_rows(burst),
        *recall,
        *(knowledge_rows(knowledge) if knowledge is not None else []),
        *(group_chat_rows(group) if group is not None else []),
    ]
    elapsed = time.perf_counter() - started
    print(machine_line() + (" -- `--quick`: no 10^6 case" if args.quick else ""))
    if not args.pg_url:
        print(f"No PostgreSQL figures: give --pg-url or set {PG_URL_ENV}.")
    print()
    print(render(rows))
    print()
    print(
        "Section 1: latency-0 fake in this process (its work is in both figures); median of "
        "5 interleaved batches of 200 turns (create: 40); then the fake in its own process,"
        " 5 interleaved batches of 200 turns per kind, the replays sending the bodies recorded"
        " from the turns just before. Section 2: fresh databases. "
        "Section 3: median of 7 x 200 loads. Databases seeded with stdlib sqlite3 and, for"
        f" PostgreSQL, generate_series on the server ({'; '.join(scale.seeding)})."
        + (
            ""
            if memory is None
            else f" Section 6: the latency-0 fake in this process; memories written one"
            f" transaction each by `MemoryStore.add` in a child process"
            f" ({memory.search.seed_s:.0f} s, beside the conversation runs), then"
            f" {memory.search.calls} searches (after 20 untimed) of random chats."
        )
        + f" Whole run {elapsed:.0f} s."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
