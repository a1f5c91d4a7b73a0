"""Section 7: resident memory against the number of distinct chats the bot has talked to.

Issue 14 §6: everything kept per chat or per user is bounded, so after 10^5 distinct chats
(each sending one message) the bot's RSS is at most 64 MiB above its RSS after 10^3.

Each backend runs in a fresh child process (``python -m bench.rss child URL CHATS...``), so its
figures hold only what one bot on that backend keeps; the instant fake LLM runs in a process of
its own (its memory is not the bot's). The child opens a real ``App`` and sends each chat's one
message through ``ChatService.stream``, as the console adapter does, ``WORKERS`` chats at a
time; after each checkpoint it collects garbage and reads its current RSS (not its peak).
``--trace`` also prints the biggest growers between the first two checkpoints (tracemalloc),
which is how the growers of issue 14 were found (and slows the run down a lot).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.common import Row, current_rss_kib, fake_in_child, fmt_count, make_settings
from bot.app import App
from bot.context import ChatContext, ChatType

CHECKPOINTS = (10**3, 10**4, 10**5)
RSS_TARGET_MIB = 64  # RSS after the last checkpoint minus RSS after the first
WORKERS = 16  # chats talking at once
PROJECT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class RssPoint:
    chats: int
    rss_kib: int
    seconds: float  # to send this checkpoint's new chats
    objects: int  # objects the garbage collector tracks


@dataclass(frozen=True, slots=True)
class RssFigures:
    backend: str  # "SQLite" or "PostgreSQL"
    points: tuple[RssPoint, ...]
    peak_kib: int  # the child's peak RSS
    error: str = ""

    @property
    def growth_mib(self) -> float:
        return (self.points[-1].rss_kib - self.points[0].rss_kib) / 1024


def _chat(n: int) -> ChatContext:
    return ChatContext("console", f"chat{n}", ChatType.PRIVATE, f"user{n}", f"User {n}")


async def _talk(app: App, first: int, last: int, workers: int) -> None:
    """Chats ``first`` .. ``last - 1`` each send one message, ``workers`` at a time."""
    todo = iter(range(first, last))

    async def worker() -> None:
        for n in todo:
            async for _ in app.service.stream(_chat(n), f"hello from chat {n}"):
                pass

    await asyncio.gather(*(worker() for _ in range(workers)))


def _print_growers(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> None:
    stats = after.compare_to(before, "lineno")
    sys.stderr.write("biggest growers (tracemalloc, by line):\n")
    for stat in stats[:15]:
        sys.stderr.write(f"  {stat.size_diff / 1024:9.0f} KiB {stat.count_diff:+8d}  {stat}\n")


async def _child(url: str, checkpoints: Sequence[int], trace: bool, workers: int) -> None:
    jobs = tempfile.TemporaryDirectory(prefix="parlour-rss-jobs-")
    settings = {"jobs_path": str(Path(jobs.name) / "jobs.sqlite")}
    async with (
        fake_in_child(0.0) as base_url,
        App(make_settings(base_url, url, storage=settings)) as app,
    ):
        done = 0
        snapshot: tracemalloc.Snapshot | None = None
        for index, chats in enumerate(checkpoints):
            started = time.perf_counter()
            await _talk(app, done, chats, workers)
            done = chats
            seconds = time.perf_counter() - started
            gc.collect()
            point = RssPoint(chats, current_rss_kib(), seconds, len(gc.get_objects()))
            print(json.dumps({"point": [point.chats, point.rss_kib, seconds, point.objects]}))
            sys.stdout.flush()
            if trace and index == 0:
                tracemalloc.start(1)
                snapshot = tracemalloc.take_snapshot()
            elif trace and index == 1 and snapshot is not None:
                _print_growers(snapshot, tracemalloc.take_snapshot())
                tracemalloc.stop()
    jobs.cleanup()
    print(json.dumps({"peak_kib": _peak_rss_kib()}))


def _peak_rss_kib() -> int:
    """This process's own high-water mark (``VmHWM``): ``ru_maxrss`` would carry over the
    parent's peak across ``exec`` on Linux."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure_rss(
    backend: str, url: str, checkpoints: Sequence[int] = CHECKPOINTS, *, trace: bool = False
) -> RssFigures:
    """Run one backend's child and collect its figures (an error is reported, not raised)."""
    command = [sys.executable, "-m", "bench.rss", "child", url, *map(str, checkpoints)]
    result = subprocess.run(
        command + (["--trace"] if trace else []),
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=None if trace else subprocess.PIPE,
        text=True,
        check=False,
    )
    points: list[RssPoint] = []
    peak = 0
    for line in result.stdout.splitlines():
        record = json.loads(line)
        if "point" in record:
            chats, rss, seconds, objects = record["point"]
            points.append(RssPoint(int(chats), int(rss), float(seconds), int(objects)))
        elif "peak_kib" in record:
            peak = int(record["peak_kib"])
    if result.returncode != 0 or len(points) != len(checkpoints):
        last = (result.stderr or "").strip().splitlines()[-1:] or [f"exit {result.returncode}"]
        return RssFigures(backend, tuple(points), peak, error=last[0][:200])
    return RssFigures(backend, tuple(points), peak)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rss", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    child = sub.add_parser("child", help="one backend, in this process (the bench runs this)")
    child.add_argument("url")
    child.add_argument("chats", nargs="+", type=int)
    child.add_argument("--trace", action="store_true")
    child.add_argument("--workers", type=int, default=WORKERS, help="chats talking at once")
    run = sub.add_parser("run", help="SQLite, then PostgreSQL with --pg-url, and print them")
    run.add_argument("--pg-url", default=None)
    run.add_argument("--quick", action="store_true", help="stop at 10^4 chats")
    run.add_argument("--trace", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.command == "child":
        asyncio.run(_child(args.url, args.chats, args.trace, args.workers))
        return 0
    from bench.table import render

    figures = run_backends(args.pg_url, CHECKPOINTS[:2] if args.quick else CHECKPOINTS, args.trace)
    sys.stdout.write(render(rss_rows(figures)) + "\n")
    return 0


def run_backends(
    pg_url: str | None, checkpoints: Sequence[int], trace: bool = False
) -> list[RssFigures]:
    """SQLite in a temporary file, and PostgreSQL in a fresh schema when ``pg_url`` is set."""
    from bench.pg import bench_schema

    figures: list[RssFigures] = []
    with tempfile.TemporaryDirectory(prefix="parlour-rss-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'rss.db'}"
        figures.append(measure_rss("SQLite", url, checkpoints, trace=trace))
    if pg_url:

        async def on_postgres() -> RssFigures:
            async with bench_schema(pg_url, "rss") as schema:
                return await asyncio.to_thread(
                    measure_rss, "PostgreSQL", schema.url, checkpoints, trace=trace
                )

        figures.append(asyncio.run(on_postgres()))
    return figures


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


S7 = "7. Memory per chat"


def mib(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def rss_rows(figures: Sequence[RssFigures]) -> list[Row]:
    rows: list[Row] = []
    for f in figures:
        for point in f.points:
            rows.append(
                Row(
                    S7,
                    f"RSS after {fmt_count(point.chats)} distinct chats x 1 message, {f.backend}"
                    f" ({WORKERS} at a time; {point.objects:,} GC-tracked objects)",
                    mib(point.rss_kib),
                )
            )
        if f.error:
            rows.append(Row(S7, f"{f.backend} run", f"failed: {f.error}", "", False))
            continue
        first, last = f.points[0], f.points[-1]
        per_chat = (last.rss_kib - first.rss_kib) / max(1, last.chats - first.chats)
        rows.append(
            Row(
                S7,
                f"growth {fmt_count(first.chats)} -> {fmt_count(last.chats)} chats, {f.backend}"
                f" ({per_chat * 1024:.0f} bytes per chat; peak {mib(f.peak_kib)})",
                f"{f.growth_mib:+.1f} MiB",
                f"<= {RSS_TARGET_MIB} MiB",
                f.growth_mib <= RSS_TARGET_MIB,
            )
        )
    return rows
