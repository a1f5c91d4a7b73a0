"""Section 13: a burst of private Telegram chats, Parlour against the bare protocol floor.

``N`` private chats write one message each, all pushed at once to the fake Bot API; the fake
model answers each after 1 s. Measured: the wall time from the push to the last chat's final edit
(by the fake's clock), whether every chat shows exactly its own answer (right, wrong, missing),
and when the model requests arrive after the push (median, p90, max): the spread of those is the
work a bot does, one turn after the other, before it calls the model.

* **floor**: :class:`bench.burst_floor.BareLoop`, a bare aiohttp loop making the same Bot API
  calls per update as Parlour (typing, ``sendMessage`` on the first words, one final edit) and
  the same streamed completion, all updates at once.
* **Parlour, SQLite**: ``App`` with the real ``TelegramAdapter`` long-polling (the bench's
  settings: no plugins, no recall, no rate limits), on a fresh database file.
* **Parlour, PostgreSQL, two replicas**: two ``App`` + ``TelegramAdapter`` in webhook mode on one
  fresh schema (each with its store's default pool of 10), behind a round-robin balancer. Webhook
  mode is how replicas run (a second long-poller of a token is refused), and how the replica
  drill runs them; the fake posts up to 40 updates at once, as Telegram does
  (:mod:`bench.burst_child`). Both replicas live in the bench's process, as in section 8: one
  process and one core for the bot side, like the floor; two processes would give the bot side
  two cores the fakes and PostgreSQL need on a small machine. What the row costs beyond SQLite
  is then the database and the replicas' coordination (inbox, leases), not parallelism. Its floor
  is the same bare long-polling loop (two bare pollers of one token cannot share updates): the
  ratio is what answering through a shared database costs over the least a bot can do.

Arrangement: the bot side (the floor or Parlour) runs in this process; the fake model and the fake
Bot API (with the balancer) each in their own (:mod:`bench.burst_child`), so their CPU time is
neither side's. A fresh fake Bot API per run (nothing pending from the run before) and a fresh
database; every run first answers a 5-chat burst untimed (connections, tokenizer, lazy imports),
then collects garbage: the first full collection after start-up scans every object the imports
made (about 0.4 s on the 2-core machine), which would land in whichever run came first.
Runs are interleaved in pairs, floor then Parlour, so a shared machine's drift hits both; the
ratio is the median of the pairs' ratios, the other figures medians over the runs.

``python -m bench.burst`` runs this section alone (``--chats 200 1000 --backends sqlite postgres
--runs 3``); ``--profile FILE`` profiles Parlour's side of a 200-chat SQLite burst (cProfile,
this thread only: aiosqlite's thread is not in it) and writes the top functions of ``bot/`` and
``adapters/`` there (the raw stats beside it, ``.pstats``). Under the profiler a turn is slower,
so the preview is edited more often than in the timed runs.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import gc
import logging
import os
import socket
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

from adapters.telegram.adapter import TelegramAdapter
from bench.burst_child import HOOK_PATH, Child, child
from bench.burst_clients import ClientsLoop
from bench.burst_floor import POLL_SECONDS, BareLoop
from bench.burst_profile import profile_report
from bench.burst_rows import Pair, RunFigures, burst_rows
from bench.common import make_settings, raise_fd_limit
from bench.pg import PG_URL_ENV, bench_schema
from bot.app import App
from bot.cli import collector

CHATS = (200, 1000)
BACKENDS = ("sqlite", "postgres")
RUNS = 3
LATENCY = 1.0
WARMUP_CHATS = 5
WARMUP_FIRST = 900_000  # the warm-up's chats are not the burst's
REPLICA_POOL = 10  # the store's default pool size, per replica

Progress = Callable[[str], None]
_Running = AbstractAsyncContextManager[None]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _telegram(tg: Child, **extra: Any) -> dict[str, Any]:
    return {
        "enabled": True,
        "token": tg.hello["token"],
        "api_server": tg.hello["api_server"],
        "polling_timeout": POLL_SECONDS,
        **extra,
    }


async def _started(adapter: TelegramAdapter, task: asyncio.Future[Any]) -> None:
    """Until the adapter takes updates; its failure if it stopped first."""
    ready: asyncio.Future[Any] = asyncio.ensure_future(adapter.ready.wait())
    await asyncio.wait({ready, task}, timeout=120, return_when=asyncio.FIRST_COMPLETED)
    ready.cancel()
    if task.done():
        task.result()
        raise RuntimeError("the Telegram adapter stopped before it was ready")
    if not adapter.ready.is_set():
        raise RuntimeError("the Telegram adapter was not ready after 120 s")


async def _stop(adapter: TelegramAdapter, task: asyncio.Future[None]) -> None:
    await adapter.stop()
    await task


class _Loop(Protocol):
    failures: list[BaseException]

    async def run(self) -> None: ...

    async def stop(self) -> None: ...


@asynccontextmanager
async def _running(tg: Child, loop: _Loop, side: str) -> AsyncIterator[None]:
    """``loop`` polling the fake Bot API while the burst runs; its failed answers logged."""
    task = asyncio.ensure_future(loop.run())
    try:
        await tg.ask("ready")
        yield
    finally:
        await loop.stop()
        await task
    if loop.failures:
        log = logging.getLogger(__name__)
        first = loop.failures[0]
        log.warning("%s: %d answers failed, the first: %r", side, len(loop.failures), first)


def _floor(tg: Child, llm_url: str, where: Path, pg_url: str | None) -> _Running:
    return _running(tg, BareLoop(tg.hello["api_server"], tg.hello["token"], llm_url), "floor")


def _clients(tg: Child, llm_url: str, where: Path, pg_url: str | None) -> _Running:
    loop = ClientsLoop(tg.hello["api_server"], tg.hello["token"], llm_url)
    return _running(tg, loop, "the floor through the clients")


@asynccontextmanager
async def _sqlite(tg: Child, llm_url: str, where: Path, pg_url: str | None) -> AsyncIterator[None]:
    settings = make_settings(llm_url, where / "parlour.db", telegram=_telegram(tg))
    async with App(settings) as app:
        adapter = TelegramAdapter(app.platform)
        task = asyncio.ensure_future(adapter.run())
        try:
            await _started(adapter, task)
            await tg.ask("ready")
            yield
        finally:
            await _stop(adapter, task)


@asynccontextmanager
async def _postgres(
    tg: Child, llm_url: str, where: Path, pg_url: str | None
) -> AsyncIterator[None]:
    assert pg_url is not None, "checked by measure_burst"
    ports = [free_port(), free_port()]
    balancer = await tg.ask("balance", ports=ports)
    async with bench_schema(pg_url, "burst") as schema, AsyncExitStack() as stack:
        url = dataclasses.replace(schema, pool_size=REPLICA_POOL).url
        for n, port in enumerate(ports):
            hook = {"url": balancer["url"], "path": HOOK_PATH}
            hook |= {"listen_host": "127.0.0.1", "listen_port": port}
            settings = make_settings(
                llm_url,
                url,
                storage={"jobs_path": str(where / f"replica{n}.jobs.sqlite")},
                telegram=_telegram(tg, mode="webhook", webhook=hook),
            )
            app = await stack.enter_async_context(App(settings))
            adapter = TelegramAdapter(app.platform)
            task = asyncio.ensure_future(adapter.run())
            stack.push_async_callback(_stop, adapter, task)  # before its App closes
            await _started(adapter, task)
        await tg.ask("ready", webhook=True)
        yield


Side = Callable[[Child, str, Path, "str | None"], AbstractAsyncContextManager[None]]
SIDES: dict[str, Side] = {
    "floor": _floor,
    "clients": _clients,
    "sqlite": _sqlite,
    "postgres": _postgres,
}


def _settle_seconds(chats: int) -> float:
    return 60.0 + chats * 0.1


async def run_once(
    side: str,
    llm: Child,
    chats: int,
    root: Path,
    pg_url: str | None,
    profiler: cProfile.Profile | None = None,
) -> RunFigures:
    """One burst of ``chats`` through ``side``, with a fresh fake Bot API and database."""
    with tempfile.TemporaryDirectory(prefix=f"burst-{side}-", dir=root) as where:
        async with (
            child("telegram") as tg,
            SIDES[side](tg, llm.hello["base_url"], Path(where), pg_url),
        ):
            await tg.ask("push", chats=WARMUP_CHATS, first=WARMUP_FIRST)
            await tg.ask("settle", timeout=_settle_seconds(WARMUP_CHATS))
            await llm.ask("starts")  # forget the warm-up's requests
            gc.collect()  # not the first full collection after start-up (0.4 s here) in a run
            if profiler is not None:
                profiler.enable()
            cpu = time.process_time()
            pushed = await tg.ask("push", chats=chats)
            result = await tg.ask("settle", timeout=_settle_seconds(chats))
            cpu = time.process_time() - cpu
            if profiler is not None:
                profiler.disable()
            arrivals = await llm.ask("starts")
    starts = sorted(at - pushed["pushed_at"] for at in arrivals["starts"])
    return RunFigures(
        side,
        chats,
        float(result["wall"]),
        int(result["right"]),
        int(result["wrong"]),
        int(result["missing"]),
        tuple(starts),
        max(result["typing"], default=float("nan")),
        dict(result["calls"]),
        dict(result["failed"]),
        cpu,
        float(result["cpu"]),
        float(arrivals["cpu"]),
        None if result["acked"] is None else float(result["acked"]),
    )


async def measure_burst(
    root: Path,
    pg_url: str | None,
    chats: Sequence[int] = CHATS,
    backends: Sequence[str] = BACKENDS,
    runs: int = RUNS,
    progress: Progress = lambda _: None,
) -> list[Pair]:
    """``runs`` interleaved pairs (floor, then Parlour) per chat count and backend."""
    backends = [b for b in backends if b != "postgres" or pg_url]
    freeze_imports()
    pairs: list[Pair] = []
    async with child("llm", LATENCY) as llm:
        for count in chats:
            for run in range(runs):
                for backend in backends:
                    progress(
                        f"burst: {count} chats, run {run + 1}/{runs}: floor, the floor through"
                        f" the clients, {backend}"
                    )
                    floor = await run_once("floor", llm, count, root, pg_url)
                    clients = await run_once("clients", llm, count, root, pg_url)
                    parlour = await run_once(backend, llm, count, root, pg_url)
                    pairs.append(Pair(backend, floor, clients, parlour))
    return pairs


def freeze_imports() -> None:
    """Both sides in this process with the collector as ``python -m bot run`` sets its own
    (``bot.cli.collector.serving``): what the imports made frozen out of later collections, so
    a collection during a burst walks what the burst made, not the libraries' 300,000 objects,
    and the youngest generation collected every 10,000 allocations, not every 700."""
    gc.collect()
    collector.serving()


async def profile_burst(root: Path, chats: int = 200) -> tuple[cProfile.Profile, RunFigures]:
    """Parlour's side of one SQLite burst under cProfile (push to the last edit)."""
    freeze_imports()
    profiler = cProfile.Profile()
    async with child("llm", LATENCY) as llm:
        figures = await run_once("sqlite", llm, chats, root, None, profiler)
    return profiler, figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.burst", description=__doc__)
    parser.add_argument("--chats", type=int, nargs="+", default=list(CHATS))
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--runs", type=int, default=RUNS, help="interleaved pairs per case")
    parser.add_argument(
        "--pg-url",
        default=os.environ.get(PG_URL_ENV) or None,
        help=f"the PostgreSQL server (default: ${PG_URL_ENV}); without one, SQLite only",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="FILE",
        help="also profile a 200-chat SQLite burst: the report in FILE, the stats in FILE.pstats",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("adapters.telegram.adapter").setLevel(logging.ERROR)  # privacy mode note
    raise_fd_limit()
    from bench.table import machine_line, render

    def progress(message: str) -> None:
        print(message, flush=True)

    with tempfile.TemporaryDirectory(prefix="parlour-burst-") as tmp:
        pairs = asyncio.run(
            measure_burst(Path(tmp), args.pg_url, args.chats, args.backends, args.runs, progress)
        )
        if args.profile is not None:
            progress("profiling Parlour's side of a 200-chat SQLite burst")
            profiler, figures = asyncio.run(profile_burst(Path(tmp)))
            args.profile.write_text(profile_report(profiler, figures), encoding="utf-8")
            profiler.dump_stats(args.profile.with_suffix(".pstats"))  # for pstats or snakeviz
    print(machine_line())
    if "postgres" in args.backends and not args.pg_url:
        print(f"No PostgreSQL rows: give --pg-url or set {PG_URL_ENV}.")
    print()
    print(render(burst_rows(pairs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
