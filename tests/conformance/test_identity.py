"""What a store says about itself: where it is (fit for logs) and whether replicas may share it."""

from __future__ import annotations

import re

from bot.config.storage_url import parse_storage_url
from bot.storage import Storage, open_storage_url
from tests.conformance.conftest import Backend


async def test_a_store_names_its_database_and_whether_replicas_may_share_it(
    backend: Backend, storage: Storage
) -> None:
    shown = parse_storage_url(storage.url)  # a URL the config accepts
    assert shown.kind == ("postgresql" if backend.name == "postgres" else "sqlite")
    assert storage.replicas is shown.is_postgresql  # PostgreSQL: limits live in the database
    assert shown.password() in (None, "***")
    if shown.kind == "sqlite":  # the same file again: a second process's view
        async with open_storage_url(storage.url) as again:
            assert again.url == storage.url


async def test_a_store_says_where_its_schema_stands_the_same_after_a_reopen(
    backend: Backend, storage: Storage
) -> None:
    version = await storage.schema_version()
    assert re.fullmatch(r"(\w+ )?v\d+(, \w+ v\d+)*", version), version
    assert not version.endswith("v0")  # open() migrated it
    async with backend.open() as again:  # another process, or a restart: nothing to migrate
        assert await again.schema_version() == version
