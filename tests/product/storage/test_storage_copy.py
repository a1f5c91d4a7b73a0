"""``storage copy``: a deployment seeded through the real storage API and scheduler, copied
SQLite -> PostgreSQL -> SQLite (and SQLite -> SQLite), keeps every row and what the bot reads."""

from __future__ import annotations

import json
import os
import re
import struct
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.cli.storage_copy import copy_storage, parse_copy_url, portable
from bot.config.storage_url import StorageURL, parse_storage_url
from bot.context import Scope
from bot.errors import ConfigError, StoreError
from bot.memory.scope import Audience
from bot.scheduling.portable_jobs import JOBS, JobsStore
from bot.scheduling.scheduler import Scheduler
from bot.storage import Storage, open_storage_url
from bot.storage.knowledge import NewChunk, NewDocument
from bot.storage.portable import TABLES, PortableStore, Row, Table, key_of
from bot.values import (
    AuditAction,
    ChatEntry,
    ChatPreferences,
    MemoryScope,
    NewMemory,
    NewTurn,
    Usage,
)
from tests.cli_harness import run_on_terminal
from tests.postgres_support import HOW_TO_RUN, fresh_pg_url, pg_base_url
from tests.product.app.test_cli import run_cli as shared_run_cli
from tests.product.app.test_cli import run_cli_process

GROUP, GROUP_CONV = "telegram:-100", "telegram:-100"
PRIVATE, PRIVATE_CONV = "telegram:7", "telegram:7"
CLEARED = "discord:55"
NEVER = datetime(2999, 1, 1, tzinfo=UTC)  # reminders that never fire during the test
VECTOR_MODEL = "embed-test"

needs_pg = pytest.mark.skipif(pg_base_url() is None, reason=HOW_TO_RUN)


# base, source, chunks: the first version of rules.md is replaced (its chunk ids left a gap)
KNOWLEDGE = (
    ("rules", "rules.md", (NewChunk(0, ("Rules",), "Spam gets a warning.", 5),)),
    ("rules", "guide/picnic.md", (NewChunk(0, ("Picnics",), "Bring a blanket, 京都の地図.", 9),)),
    ("rules", "rules.md", (
        NewChunk(0, ("Rules",), "No spam in the general channel.", 8),
        NewChunk(1, ("Rules", "Bans"), "A second warning means a ban for a week.", 10, page=2),
    )),
    ("faq", "faq.md", (NewChunk(0, (), "The ban appeal form is online.", 7),)),
)  # fmt: skip
KNOWLEDGE_SEARCHES = (
    (("rules",), "how long is a ban?"),
    (("rules",), "bans"),  # a heading
    (("rules", "faq"), "ban appeal spam"),
    (("faq",), "ban"),
    (("rules",), "京都"),
)


def sqlite_at(path: Path) -> StorageURL:
    return parse_storage_url(f"sqlite:///{path}")


def answer(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": text}]


async def seed_knowledge(store: Storage) -> None:
    """Two bases, a replaced document, a binding and a chunk's vector."""
    for number, (base, source, chunks) in enumerate(KNOWLEDGE):
        document = NewDocument(base, source, f"sha256:{number}", "markdown", "cli", chunks)
        await store.put_document(document)
    assert await store.bind_base(GROUP, "rules", "7")
    [chunk, *_] = await store.document_chunks("rules", "rules.md")
    # No protocol method writes a chunk's vector yet: the row goes in as a copy writes it.
    [vectors] = [table for table in TABLES if table.name == "knowledge_vectors"]
    vector = (chunk.chunk_id, VECTOR_MODEL, 2, struct.pack("<2f", 0.6, 0.8))
    assert await portable(store).write(vectors, [vector]) == 1


async def seed(url: StorageURL) -> None:
    """Every kind of row a deployment holds, written the way the bot writes them."""
    async with open_storage_url(url) as store:
        await store.record_overheard(NewTurn(GROUP_CONV, GROUP, "9", "Ann", "lunch at noon?"), 10)
        await store.record_overheard(NewTurn(GROUP_CONV, GROUP, "8", "Bo", "京都の天気"), 10)
        heard = [o.overheard_id for o in await store.load_overheard(GROUP_CONV, since=0)]
        first = await store.begin_turn(
            NewTurn(GROUP_CONV, GROUP, "7", "Cy", "what about the picnic?", "m1", tuple(heard[:1]))
        )
        await store.complete_turn(first, answer("Sunny."), Usage(120, 30, 64), "gpt-test")
        second = await store.begin_turn(NewTurn(GROUP_CONV, GROUP, "7", "Cy", "tell me a joke"))
        await store.fail_turn(second, "llm: timed out", Usage(50, 0))
        third = await store.begin_turn(NewTurn(GROUP_CONV, GROUP, "9", "Ann", "and the rain?"))
        await store.complete_turn(third, answer("Bring an umbrella."), Usage(80, 20), "gpt-test")
        assert await store.mark_undelivered(third, "telegram: chat not found")
        private = await store.begin_turn(NewTurn(PRIVATE_CONV, PRIVATE, "7", "Cy", "my cat Tom"))
        await store.complete_turn(private, answer("Noted."), Usage(10, 5), "gpt-test")
        await store.begin_turn(NewTurn(PRIVATE_CONV, PRIVATE, "7", "Cy", "still thinking"))
        await store.reset(GROUP_CONV + ":t:3", GROUP, "7", "Cy")
        await store.record_change(GROUP, "7", "Cy", AuditAction.PERSONA, "reset to the default")
        gone = await store.begin_turn(NewTurn(CLEARED, CLEARED, "1", "Di", "delete me"))
        await store.complete_turn(gone, answer("ok"), Usage(5, 5), "gpt-test")
        await store.clear_chat(CLEARED, "1", "Di")
        await store.save_preferences(
            GROUP, ChatPreferences(scope=Scope.USER, system_prompt="Be brief")
        )
        await store.save_preferences(PRIVATE, ChatPreferences(system_prompt="Be kind"))
        cat = await store.add_memory(
            NewMemory(PRIVATE, PRIVATE_CONV, "7", "Cy", MemoryScope.PRIVATE, "Cy's cat is Tom"),
            [0.6, 0.8],
            VECTOR_MODEL,
        )
        await store.add_memory(
            NewMemory(GROUP, GROUP_CONV, "7", "Cy", MemoryScope.MEMBER, "Cy likes picnics", first)
        )
        kyoto = await store.add_memory(
            NewMemory(GROUP, GROUP_CONV, "8", "Bo", MemoryScope.CHAT, "京都で花見をする")
        )
        await store.put_vectors(VECTOR_MODEL, [(kyoto.memory_id, [1.0, 0.0])])
        await store.put_turn_vectors(VECTOR_MODEL, [(first, [0.6, 0.8])])
        assert cat.memory_id < kyoto.memory_id
        await store.save_summary(GROUP_CONV, GROUP, "They planned a picnic.", first)
        await store.book_usage(GROUP, "", "", Usage(300, 40, 128))  # a summary's own tokens
        await store.note_chat(ChatEntry("telegram", "-100", "group", "Picnic planners ☀"))
        await store.note_chat(ChatEntry("telegram", "7", "private", "Cy"))
        await store.kv_set("reminders", "next", {"id": 3, "text": "water the plants ☘"})
        await store.kv_set("notes", "a", [1, 2, 3])
        await store.kv_increment("notes", "count")
        delivery = await store.begin_delivery("telegram", GROUP, "-100", "3", "m1")
        await store.update_delivery(delivery, message_id="42", shown="Sun", turn_id=first)
        assert await store.inbox_put("telegram", 501, "-100", '{"update_id": 501}')
        assert await store.inbox_put("telegram", 502, "-100", '{"update_id": 502}')
        [handled] = await store.inbox_claim("telegram", "worker-1", 30.0, 1)
        assert await store.inbox_done(handled.id, "worker-1")
        await seed_knowledge(store)
    scheduler = Scheduler(jobs_file(url))
    scheduler.at("reminder", "reminders:1", NEVER, {"chat": GROUP, "text": "picnic ☀"})
    scheduler.every("app:retention", "app:retention", timedelta(hours=1))
    await scheduler.shutdown()


def jobs_file(url: StorageURL) -> Path:
    assert url.path is not None
    return url.path.with_name(f"{url.path.stem}.jobs.sqlite")


async def read_all(part: PortableStore, table: Table) -> list[Row]:
    rows: list[Row] = []
    after = None
    while batch := await part.read(table, after, 2):  # small batches: paging is under test
        rows.extend(batch)
        after = key_of(table, batch[-1])
    return rows


async def dump(url: StorageURL) -> dict[str, list[Row]]:
    """Every row of every table, by table (the jobs too)."""
    found: dict[str, list[Row]] = {}
    async with open_storage_url(url) as store:
        part = portable(store)
        for table in part.tables():
            found[table.name] = await read_all(part, table)
    jobs = JobsStore(url, create=False)
    try:
        found[JOBS.name] = await read_all(jobs, JOBS)
    finally:
        jobs.close()
    return found


async def what_the_bot_reads(store: Storage) -> dict[str, Any]:
    """The answers the bot gets from a store: windows, usage, search, settings, plugin data."""
    audience = Audience(PRIVATE, PRIVATE_CONV, "7")
    group = Audience(GROUP, GROUP_CONV, "8")
    return {
        "windows": [await store.load_window(key, 50) for key in (GROUP_CONV, PRIVATE_CONV)],
        "usage": await store.daily_usage("2000-01-01"),
        "memories": [m.memory_id for m in await store.search_memories(
            audience, "cat Tom", limit=5, min_score=0)],
        "cjk": [m.memory_id for m in await store.search_memories(
            group, "京都", limit=5, min_score=0)],
        "vectors": [
            (m.memory_id, list(v)) for m, v in await store.memory_vectors(
                group, VECTOR_MODEL, 2, 10)
        ],
        "turns": [(t.turn_id, t.user_id, t.user_name, t.text, t.created_at)
            for t in await store.search_turns(
                GROUP_CONV, "picnic", before_turn_id=10**9, limit=5, min_score=0)],
        "turn vectors": [
            (t.turn_id, list(v)) for t, v in await store.turn_vectors(
                GROUP_CONV, VECTOR_MODEL, 2, before_turn_id=10**9, limit=10)
        ],
        "audit": await store.clear_audit(CLEARED),
        "trail": await store.audit(),
        "preferences": await store.load_preferences(),
        "summary": await store.load_summary(GROUP_CONV),
        "kv": await store.kv_items("notes"),
        "chats": await store.list_chats(),
        "deliveries": await store.deliveries("telegram"),
        "inbox": await store.inbox_pending("telegram"),
        "knowledge": [[(c.chunk_id, c.base, c.source, c.ordinal, c.headings, c.text, c.page)
            for c in await store.search_chunks(bases, query, limit=9)]
            for bases, query in KNOWLEDGE_SEARCHES],  # scores: each backend's own BM25
        "documents": [await store.list_documents(base) for base in ("rules", "faq")],
        "bound bases": await store.bound_bases(GROUP),
    }  # fmt: skip


async def reads_of(url: StorageURL) -> dict[str, Any]:
    async with open_storage_url(url) as store:
        return await what_the_bot_reads(store)


def counts(report: Any) -> dict[str, tuple[int, int]]:
    return {c.table: (c.copied, c.already_there) for c in report.tables}


@pytest.fixture
async def seeded(tmp_path: Path) -> StorageURL:
    url = sqlite_at(tmp_path / "source" / "parlour.db")
    await seed(url)
    return url


async def test_sqlite_to_sqlite_keeps_every_row_and_every_answer(
    seeded: StorageURL, tmp_path: Path
) -> None:
    target = sqlite_at(tmp_path / "target" / "copy.db")
    report = await copy_storage(seeded, target, batch=2)
    source_rows = await dump(seeded)
    assert source_rows == await dump(target)
    assert all(source_rows[name] for name in source_rows), "the seed leaves no table empty"
    assert counts(report) == {name: (len(rows), 0) for name, rows in source_rows.items()}
    reads = await reads_of(target)
    assert reads == await reads_of(seeded)
    assert reads["memories"] and reads["cjk"] and reads["turns"]  # the indexes were rebuilt
    assert all(reads["knowledge"]) and reads["bound bases"] == ["rules"]
    assert reads["inbox"] == 1
    async with open_storage_url(target) as store:  # a redelivery is recognised after the move
        assert not await store.inbox_put("telegram", 501, "-100", '{"update_id": 501}')
    # The reminders are the scheduler's again, in the file beside the new database.
    scheduler = Scheduler(jobs_file(target))
    pending = {job.job_id: job.payload for job in scheduler.pending()}
    await scheduler.shutdown()
    assert pending["reminders:1"] == {"chat": GROUP, "text": "picnic ☀"}
    assert "app:retention" in pending


async def test_the_copy_goes_on_where_the_source_left_off(
    seeded: StorageURL, tmp_path: Path
) -> None:
    target = sqlite_at(tmp_path / "copy.db")
    await copy_storage(seeded, target)
    async with open_storage_url(target) as store:
        turn = await store.begin_turn(NewTurn(GROUP_CONV, GROUP, "7", "Cy", "a new picnic"))
        source_ids = [row[0] for row in (await dump(seeded))["turns"]]
        assert turn > max(source_ids)  # the id counter moved past every copied turn
        found = await store.search_turns(
            GROUP_CONV, "picnic", before_turn_id=turn + 1, limit=5, min_score=0
        )
        assert turn in [t.turn_id for t in found]


async def test_a_target_with_rows_is_refused_without_force_and_nothing_is_copied_twice(
    seeded: StorageURL, tmp_path: Path
) -> None:
    target = sqlite_at(tmp_path / "copy.db")
    await copy_storage(seeded, target)
    before = await dump(target)
    with pytest.raises(StoreError, match=r"already holds rows .*turns .*--force"):
        await copy_storage(seeded, target)
    again = await copy_storage(seeded, target, force=True, batch=3)
    assert {name: copied for name, (copied, _) in counts(again).items()} == dict.fromkeys(before, 0)
    assert {name: there for name, (_, there) in counts(again).items()} == {
        name: len(rows) for name, rows in before.items()
    }
    assert await dump(target) == before  # usage and plugin data not added a second time
    assert (await reads_of(target))["usage"] == (await reads_of(seeded))["usage"]


async def test_a_missing_source_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.db"
    with pytest.raises(StoreError, match="does not exist"):
        await copy_storage(sqlite_at(missing), sqlite_at(tmp_path / "copy.db"))
    assert not missing.exists()
    assert not (tmp_path / "copy.db").exists()


async def test_a_file_that_is_no_parlour_database_is_refused_untouched(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(StoreError, match="holds no Parlour tables"):
        await copy_storage(sqlite_at(empty), sqlite_at(tmp_path / "copy.db"))
    assert empty.read_bytes() == b""  # not migrated into an empty Parlour database


async def test_source_and_target_must_differ(seeded: StorageURL) -> None:
    with pytest.raises(StoreError, match="same database"):
        await copy_storage(seeded, seeded)


def test_an_unknown_scheme_names_the_side() -> None:
    with pytest.raises(ConfigError, match=r"^target URL: unknown scheme 'mysql'"):
        parse_copy_url("mysql://root:hunter2@db/x", "target")


async def test_an_unreachable_server_is_one_line_without_the_password(
    seeded: StorageURL,
) -> None:
    target = parse_storage_url("postgresql://parlour:s3cr3t-pw@127.0.0.1:1/parlour?schema=x")
    with pytest.raises(StoreError) as caught:
        await copy_storage(seeded, target)
    message = str(caught.value)
    assert "s3cr3t-pw" not in message and "\n" not in message
    assert "postgresql://parlour:***@127.0.0.1:1/parlour" in message


@needs_pg
async def test_sqlite_to_postgresql_and_back_keeps_every_row(
    seeded: StorageURL, tmp_path: Path
) -> None:
    middle = parse_storage_url(fresh_pg_url())
    back = sqlite_at(tmp_path / "back.db")
    await copy_storage(seeded, middle, batch=2)
    await copy_storage(middle, back, batch=2)
    source_rows = await dump(seeded)
    assert await dump(middle) == source_rows
    assert await dump(back) == source_rows
    source_reads = await reads_of(seeded)
    assert await reads_of(middle) == source_reads  # search, windows and usage on PostgreSQL
    assert await reads_of(back) == source_reads
    again = await copy_storage(seeded, middle, force=True)
    assert {name: copied for name, (copied, _) in counts(again).items() if copied} == {}
    assert await dump(middle) == source_rows
    async with open_storage_url(middle) as store:  # identities moved past the copied ids
        turn = await store.begin_turn(NewTurn(GROUP_CONV, GROUP, "7", "Cy", "next"))
        assert turn > max(int(str(row[0])) for row in source_rows["turns"])


@needs_pg
async def test_a_postgresql_source_without_tables_is_refused_and_not_created(
    tmp_path: Path,
) -> None:
    source = parse_storage_url(fresh_pg_url())
    with pytest.raises(StoreError, match="holds no Parlour tables"):
        await copy_storage(source, sqlite_at(tmp_path / "copy.db"))
    import asyncpg

    conn = await asyncpg.connect(pg_base_url())
    try:
        exists = await conn.fetchval(
            "SELECT count(*) FROM pg_namespace WHERE nspname = $1", source.schema
        )
    finally:
        await conn.close()
    assert exists == 0


async def run_cli(*args: str, cwd: Path, process: bool = False) -> tuple[int, str, str]:
    """``python -m bot`` in ``cwd`` without the caller's OpenAI or Parlour settings (the shared
    runner, which also fails on any secret in the output); in-process unless ``process``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PARLOUR_"))}
    runner = run_cli_process if process else shared_run_cli
    return await runner(*args, env=env, cwd=cwd)


async def test_the_command_copies_prints_counts_and_refuses_a_second_run(
    seeded: StorageURL, tmp_path: Path
) -> None:
    source, target = f"sqlite:///{seeded.path}", f"sqlite:///{tmp_path / 'cli.db'}"
    # Processes of their own: the seed's pending turn belongs to a live process (this one), so
    # each copy leaves it pending and logs nothing; in-process it would be this pid's own.
    code, out, err = await run_cli("storage", "copy", source, target, cwd=tmp_path, process=True)
    assert (code, err) == (0, "")  # stderr is no terminal here: no progress bar
    rows = await dump(seeded)
    for name, table_rows in rows.items():
        assert re.search(rf"^{name} +{len(table_rows):,} copied, 0 already there$", out, re.M)
    assert f"copied {sum(map(len, rows.values())):,} rows from" in out

    code, out, err = await run_cli("storage", "copy", source, target, cwd=tmp_path, process=True)
    assert code == 1 and out == ""
    assert err.startswith("error: target sqlite:///") and "--force" in err
    assert len(err.splitlines()) == 1

    code, out, err = await run_cli(
        "storage", "copy", source, target, "--force", "--json", cwd=tmp_path
    )
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert {r["table"]: (r["copied"], r["already_there"]) for r in records} == {
        name: (0, len(table_rows)) for name, table_rows in rows.items()
    }


async def test_the_command_never_shows_a_password(seeded: StorageURL, tmp_path: Path) -> None:
    target = "postgresql://parlour:s3cr3t-pw@127.0.0.1:1/parlour"
    code, out, err = await run_cli(
        "storage", "copy", f"sqlite:///{seeded.path}", target, cwd=tmp_path
    )
    assert code == 1
    assert "s3cr3t-pw" not in out + err
    assert "parlour:***@127.0.0.1:1" in err and len(err.splitlines()) == 1


def test_the_progress_bar_is_drawn_on_a_terminal(seeded: StorageURL, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PARLOUR_"))}
    target = f"sqlite:///{tmp_path / 'tty.db'}"
    code, out, bar = run_on_terminal(
        "storage", "copy", f"sqlite:///{seeded.path}", target, env=env, cwd=tmp_path
    )
    assert code == 0
    assert re.search(r"\rturns +\[#{30}\] +\d+/\d+ 100%", bar)
    assert "\r" not in out  # the counts stay clean for a pipe


@needs_pg
async def test_the_command_moves_a_deployment_to_postgresql_showing_no_password(
    seeded: StorageURL, tmp_path: Path
) -> None:
    # The server trusts the loopback: a password in the URL is accepted and never needed.
    plain = fresh_pg_url()
    with_password = plain.replace("postgresql://postgres@", "postgresql://postgres:s3cr3t-pw@")
    assert with_password != plain
    expected = await dump(seeded)  # opening it here closes the seed's pending turn first
    code, out, err = await run_cli(
        "storage", "copy", f"sqlite:///{seeded.path}", with_password, cwd=tmp_path
    )
    assert (code, err) == (0, "")
    assert "s3cr3t-pw" not in out
    assert f"to {parse_storage_url(with_password).shown()}" in out
    assert "postgres:***@" in out
    assert await dump(parse_storage_url(plain)) == expected
