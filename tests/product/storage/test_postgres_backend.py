"""The PostgreSQL backend itself: schemas, migrations between processes, version refusal, errors
that never show the password, the pool, query plans. Behaviour every backend shares is in
``tests/conformance/``. Needs ``PARLOUR_TEST_PG_URL`` (skipped without it)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sys
import textwrap
import traceback
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from bot.config.storage_url import parse_storage_url
from bot.errors import StoreError
from bot.storage import open_storage_url
from bot.storage.postgres import PostgresStore
from bot.storage.postgres.connection import PostgresDialect
from bot.storage.postgres.migrations import CORE_STEPS
from bot.storage.postgres.turns import LAST_ID, window_page
from bot.storage.sql.history import EXPORT_PAGE, export_sql
from bot.storage.sql.summaries import BETWEEN_PAGE, between_sql
from bot.values import NewTurn, Usage
from tests import postgres_support

pytestmark = pytest.mark.skipif(
    postgres_support.pg_base_url() is None, reason=postgres_support.HOW_TO_RUN
)

PASSWORD = "pw-Never-Shown-4711"
ROOT = Path(__file__).resolve().parents[3]


def store_at(url: str) -> PostgresStore:
    parsed = parse_storage_url(url)
    assert parsed.dsn is not None
    return PostgresStore(parsed.dsn, schema=parsed.schema)


def with_password(url: str, password: str = PASSWORD, **changes: str) -> str:
    """``url`` with a password (and maybe another port or database) in it."""
    parts = urlsplit(url)
    user = parts.username or "postgres"
    host = parts.hostname or "127.0.0.1"
    port = changes.get("port", str(parts.port or 5432))
    path = changes.get("path", parts.path)
    user = changes.get("user", user)
    return urlunsplit((parts.scheme, f"{user}:{password}@{host}:{port}", path, parts.query, ""))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def raw(url: str) -> asyncpg.Connection:
    """A plain connection to the server (no schema)."""
    parsed = parse_storage_url(url)
    return await asyncpg.connect(parsed.dsn)


def turn(conv: str = "tg:1", text: str = "hi") -> NewTurn:
    return NewTurn(conv, conv, "u1", "U", text)


@pytest.fixture
def url() -> str:
    return postgres_support.fresh_pg_url()


@pytest.fixture
async def store(url: str) -> AsyncIterator[PostgresStore]:
    async with store_at(url) as opened:
        yield opened


async def test_open_storage_url_gives_a_shared_store_with_its_tables_in_the_schema(
    url: str,
) -> None:
    store = open_storage_url(with_password(url))
    assert isinstance(store, PostgresStore)
    assert store.replicas is True
    assert PASSWORD not in store.url and ":***@" in store.url
    schema = parse_storage_url(url).schema
    async with store:
        assert store.schema == schema
        conn = await raw(url)
        try:
            tables = await conn.fetch(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
                schema,
            )
            public = await conn.fetchval(
                "SELECT count(*) FROM information_schema.tables"
                " WHERE table_schema = 'public' AND table_name = 'turns'"
            )
        finally:
            await conn.close()
    assert {row["table_name"] for row in tables} >= {
        "parlour_schema",
        "turns",
        "resets",
        "chat_preferences",
        "clear_audit",
        "chat_audit",
        "overheard",
        "plugin_kv",
        "memories",
        "memory_vectors",
        "summaries",
        "usage_daily",
        "deliveries",
    }
    assert public == 0


async def test_two_schemas_of_one_database_never_see_each_other() -> None:
    one_url, two_url = postgres_support.fresh_pg_url(), postgres_support.fresh_pg_url()
    async with store_at(one_url) as one, store_at(two_url) as two:
        first = await one.begin_turn(turn("tg:1", "in one"))
        await one.complete_turn(first, [{"role": "assistant", "content": "a"}], Usage(5, 5), "m")
        await two.kv_set("p", "k", "two's")
        await two.reset("tg:1", "tg:1", "u")
        assert await two.load_window("tg:1", 5) == []
        assert await two.conversations() == []
        assert await two.daily_usage("1970-01-01") == []
        assert await one.kv_get("p", "k") is None
        assert [t.turn_id for t in await one.load_window("tg:1", 5)] == [first]
        assert await one.reset_point("tg:1") == 0
        # Each schema has its own identities: the second's first turn is 1 as well.
        assert await two.begin_turn(turn("tg:1", "in two")) == first == 1


async def test_turn_ids_become_visible_in_the_order_they_were_handed_out(url: str) -> None:
    """Two instances (as two replicas) begin turns at once while a reader watches: every
    snapshot holds ids 1..max with no gap, so no reader (nor a reset's cut) ever sees a turn
    that a smaller, still invisible id will later precede."""
    seen: list[tuple[int, int]] = []
    async with store_at(url) as one, store_at(url) as two, store_at(url) as reader:
        done = asyncio.Event()

        async def watch() -> None:
            async with reader.database.acquire() as conn:
                while not done.is_set():
                    row = await conn.fetchrow("SELECT count(*), coalesce(max(id), 0) FROM turns")
                    assert row is not None
                    seen.append((int(row[0]), int(row[1])))

        watcher = asyncio.ensure_future(watch())
        ids = await asyncio.gather(
            *(store.begin_turn(turn(f"tg:{i}")) for i in range(150) for store in (one, two))
        )
        done.set()
        await watcher
    assert sorted(ids) == list(range(1, 301))
    assert len(seen) > 10
    assert all(count == top for count, top in seen), [s for s in seen if s[0] != s[1]][:5]


# Opens the same fresh schema as its twin, once both are ready, with a component of its own
# whose steps are not idempotent (a second run fails, a skipped one leaves a row missing).
_OPENER = textwrap.dedent(
    """
    import asyncio, sys
    from typing import Any, ClassVar
    from bot.storage.postgres import PostgresStore

    class Probe:
        SCHEMA: ClassVar = ("probe", (
            "CREATE TABLE probe_runs (step INT PRIMARY KEY, pid INT);"
            " INSERT INTO probe_runs VALUES (1, pg_backend_pid())",
            "INSERT INTO probe_runs VALUES (2, pg_backend_pid())",
        ))

    class ProbedStore(Probe, PostgresStore):
        pass

    async def main() -> None:
        store = ProbedStore(sys.argv[1], schema=sys.argv[2])
        print("ready", flush=True)
        sys.stdin.readline()
        async with store:
            print("opened", store.schema, flush=True)

    asyncio.run(main())
    """
)


@pytest.mark.slow
async def test_two_processes_migrate_one_fresh_schema_at_once(url: str) -> None:
    parsed = parse_storage_url(url)
    assert parsed.dsn is not None and parsed.schema is not None
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _OPENER,
            parsed.dsn,
            parsed.schema,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for _ in range(2)
    ]
    for proc in procs:  # both imported everything and wait: start them together
        assert proc.stdout is not None
        assert (await proc.stdout.readline()).strip() == b"ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
    results = await asyncio.wait_for(
        asyncio.gather(*(proc.communicate() for proc in procs)), timeout=120
    )
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err.decode()
        assert out.decode().strip() == f"opened {parsed.schema}"
    conn = await raw(url)
    try:
        versions = await conn.fetch(
            f'SELECT component, version FROM "{parsed.schema}".parlour_schema ORDER BY 1'
        )
        steps = await conn.fetch(f'SELECT step FROM "{parsed.schema}".probe_runs ORDER BY 1')
    finally:
        await conn.close()
    found = {r["component"]: r["version"] for r in versions}  # memories, coordination too
    assert found["core"] == len(CORE_STEPS) and found["probe"] == 2
    assert [r["step"] for r in steps] == [1, 2]  # each step ran exactly once


class _Probe:
    SCHEMA: ClassVar[tuple[str, tuple[str, ...]]] = (
        "probe",
        ("CREATE TABLE probe_runs (step INT PRIMARY KEY)",),
    )


class _ProbedStore(_Probe, PostgresStore):
    pass


async def test_a_schema_newer_than_the_code_is_refused(url: str) -> None:
    parsed = parse_storage_url(url)
    assert parsed.dsn is not None
    async with (
        _ProbedStore(parsed.dsn, schema=parsed.schema) as store,
        store.database.acquire() as conn,
    ):
        await conn.execute("UPDATE parlour_schema SET version = 7 WHERE component = 'probe'")
    with pytest.raises(StoreError, match=r"probe schema version 7, newer than .* \(1\)"):
        async with _ProbedStore(parsed.dsn, schema=parsed.schema):
            pass
    # The core alone does not know "probe": that component is not asked about.
    async with store_at(url) as store, store.database.acquire() as conn:
        await conn.execute(
            "UPDATE parlour_schema SET version = $1 WHERE component = 'core'",
            len(CORE_STEPS) + 1,
        )
    with pytest.raises(StoreError, match=r"core schema version \d+, newer") as refused:
        async with store_at(url):
            pass
    assert parse_storage_url(url).schema in str(refused.value)


async def test_a_role_confined_to_its_schema_opens_it(url: str) -> None:
    """A role that may not create schemas starts in the one its administrator made for it, and
    is told plainly when there is none."""
    schema = parse_storage_url(url).schema
    role = f"{schema}_role"
    admin = await raw(url)
    try:
        await admin.execute(f'CREATE ROLE "{role}" LOGIN')
        await admin.execute(f'CREATE SCHEMA "{schema}" AUTHORIZATION "{role}"')
        confined = with_password(url, user=role)
        async with open_storage_url(confined) as store:
            turn_id = await store.begin_turn(turn())
            assert await store.turn_exists(turn_id)
        elsewhere = confined.replace(f"schema={schema}", f"schema={schema}_other")
        with pytest.raises(StoreError, match="permission denied") as refused:
            async with open_storage_url(elsewhere):
                pass
        assert PASSWORD not in str(refused.value)
    finally:
        await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await admin.execute(f'DROP ROLE IF EXISTS "{role}"')
        await admin.close()


@pytest.mark.parametrize(
    "why",
    ["refused", "no database", "no role"],
)
async def test_unusable_servers_are_store_errors_that_never_show_the_password(
    url: str, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    changes = {
        "refused": {"port": str(free_port())},
        "no database": {"path": "/parlour_no_such_database"},
        "no role": {"user": "parlour_no_such_role"},
    }[why]
    secret_url = with_password(url, **changes)
    store = open_storage_url(secret_url)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(StoreError) as caught:
        async with store:
            pass
    error = caught.value
    shown = "".join(traceback.format_exception(error))
    expected = {
        "refused": "connection refused",
        "no database": "no such database",
        "no role": "authentication failed",
    }[why]
    assert expected in str(error)
    assert store.url in str(error) and ":***@" in str(error)
    assert PASSWORD not in shown and PASSWORD not in repr(error)
    assert error.__cause__ is None and error.__suppress_context__
    assert all(PASSWORD not in record.getMessage() for record in caplog.records)
    with pytest.raises(StoreError, match="not open"):
        await store.load_window("tg:1", 5)  # nothing half-open is left behind


async def test_the_pool_holds_at_most_pool_size_connections_in_the_schema(url: str) -> None:
    store = store_at(url + "&pool_size=2&application_name=parlour_pool_probe")
    async with store:
        ids = await asyncio.gather(*(store.begin_turn(turn(f"tg:{i}")) for i in range(40)))
        paths = await asyncio.gather(
            *(store.database.pool.fetchval("SHOW search_path") for _ in range(10))
        )
        assert store.database.pool.get_max_size() == 2
        assert store.database.pool.get_size() <= 2
        conn = await raw(url)
        try:
            server_side = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE application_name = 'parlour_pool_probe'"
            )
        finally:
            await conn.close()
    assert sorted(ids) == list(range(1, 41))
    assert set(paths) == {f'"{store.schema}", public'}
    assert 1 <= server_side <= 2
    with pytest.raises(StoreError, match="pool_size"):
        store_at(url + "&pool_size=0")


async def test_connections_the_server_dropped_are_replaced(store: PostgresStore, url: str) -> None:
    """A server restart or failover closes every pooled connection: the next calls reconnect."""
    await asyncio.gather(*(store.begin_turn(turn()) for _ in range(5)))
    pool = store.database.pool
    held = [await pool.acquire() for _ in range(pool.get_size())]  # every open connection
    gone = asyncio.Event()
    closed: list[object] = []

    def lost(conn: object) -> None:
        closed.append(conn)
        if len(closed) == len(held):
            gone.set()

    for conn in held:
        conn.add_termination_listener(lost)
    pids = [conn.get_server_pid() for conn in held]
    for conn in held:
        await pool.release(conn)
    server = await raw(url)
    try:
        await server.execute("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", pids)
    finally:
        await server.close()
    await asyncio.wait_for(gone.wait(), timeout=30)  # our side has seen every one close
    await asyncio.gather(*(store.begin_turn(turn(text="after")) for _ in range(5)))
    window = await store.load_window("tg:1", 20)
    assert [t.messages[0]["content"] for t in window] == ["hi"] * 5 + ["after"] * 5


@pytest.mark.parametrize("generic", [False, True], ids=["custom plan", "generic plan"])
async def test_conversation_reads_walk_the_conversation_not_the_history(
    store: PostgresStore, generic: bool
) -> None:
    """What the plans really touch in a conversation of 5*10^4 turns that then went quiet while
    5*10^4 turns of other chats arrived (docs/scaling.md has 10^6 and 10^7): the
    (conv_key, id) index, about one page of it -- never a scan of the table, nor a walk of the
    primary key through the newer chats' rows."""
    statements = {  # statement -> its arguments and its page
        window_page(50): (("tg:quiet", LAST_ID), 50),
        export_sql(PostgresDialect()): (("tg:quiet", 0, LAST_ID), EXPORT_PAGE),
        between_sql(PostgresDialect()): (("tg:quiet", 0, LAST_ID), BETWEEN_PAGE),
    }
    async with store.database.acquire() as conn:
        await conn.execute(
            "INSERT INTO turns (conv_key, chat_key, user_id, user_text, status, answer,"
            " created_at) SELECT k, k, 'u', 'q' || n, 'answered', '[]', n FROM"
            " generate_series(1, 150000) AS n, LATERAL (SELECT CASE"
            " WHEN n <= 100000 AND n % 2 = 0 THEN 'tg:quiet' ELSE 'tg:' || (n % 999) END)"
            " AS c(k)"
        )
        await conn.execute("ANALYZE turns")
        mode = "force_generic_plan" if generic else "force_custom_plan"
        await conn.execute(f"SET plan_cache_mode = {mode}")
        for number, (sql, (args, page)) in enumerate(statements.items()):
            await conn.execute(f"PREPARE probe{number} AS {sql}")
            literals = ", ".join(f"'{a}'" if isinstance(a, str) else str(a) for a in args)
            [(plan,)] = await conn.fetch(
                f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE probe{number} ({literals})"
            )
            nodes = list(_plan_nodes(json.loads(plan)[0]["Plan"]))
            scans = [n for n in nodes if n["Node Type"].endswith("Scan")]
            on_turns = [n for n in scans if n.get("Index Name", "").startswith("turns")]
            assert {n["Index Name"] for n in on_turns} == {"turns_by_conversation"}, nodes
            assert not [n for n in scans if n["Node Type"] == "Seq Scan"], nodes
            touched = sum(n["Actual Rows"] + n.get("Rows Removed by Filter", 0) for n in on_turns)
            assert touched <= page, (sql, touched)
        await conn.execute("RESET plan_cache_mode")
    window = await store.load_window("tg:quiet", 50)
    assert [t.messages[0]["content"] for t in window][-1] == "q100000"
    assert len(window) == 50


def _plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _plan_nodes(child)
