"""``storage.url``: one key picks the backend; its password never shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import settings_from_mapping
from bot.config.masking import secret_values
from bot.config.storage_url import parse_storage_url
from bot.errors import ConfigError
from bot.storage import missing_storage, open_storage
from tests.product.app.test_check_config import check_config
from tests.product.app.test_cli import SECRET

PASSWORD = "pw-Pg-Replica-5521"


def test_sqlite_urls_name_a_file_relative_or_absolute() -> None:
    assert parse_storage_url("sqlite:///data/parlour.db").path == Path("data/parlour.db")
    assert parse_storage_url("sqlite:////srv/bot/parlour.db").path == Path("/srv/bot/parlour.db")
    assert parse_storage_url("sqlite:///:memory:").path == Path(":memory:")


def test_postgresql_urls_keep_their_parameters_and_take_a_schema() -> None:
    url = parse_storage_url(
        f"postgres://bot:{PASSWORD}@db.example:6432/parlour?sslmode=require&schema=tenant_7"
    )
    assert url.is_postgresql and url.schema == "tenant_7"
    assert url.dsn == f"postgresql://bot:{PASSWORD}@db.example:6432/parlour?sslmode=require"
    assert url.password() == PASSWORD
    assert PASSWORD not in url.shown()
    assert url.shown() == (
        "postgresql://bot:***@db.example:6432/parlour?sslmode=require&schema=tenant_7"
    )
    assert url.sqlalchemy_url().startswith("postgresql+psycopg://bot:")
    pooled = parse_storage_url("postgresql://db.example/parlour?pool_size=4&sslmode=require")
    assert pooled.sqlalchemy_url() == "postgresql+psycopg://db.example/parlour?sslmode=require"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mysql://root@db/x", "unknown scheme 'mysql'"),
        ("sqlite://data.db", "three slashes"),
        ("data/parlour.db", "must look like"),
        (f"postgresql://bot:{PASSWORD}@/x", "needs a host"),
        (f"postgresql://bot:{PASSWORD}@db/x?schema=1; drop", "not a plain PostgreSQL name"),
    ],
)
def test_bad_urls_say_what_is_wrong_without_the_password(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_storage_url(text)
    assert expected in str(caught.value)
    assert PASSWORD not in str(caught.value)


def test_the_url_wins_over_the_path_and_the_path_still_works(tmp_path: Path) -> None:
    by_path = settings_from_mapping({"storage": {"path": str(tmp_path / "a.db")}})
    assert by_path.storage.effective_url.path == tmp_path / "a.db"
    by_url = settings_from_mapping(
        {"storage": {"path": str(tmp_path / "a.db"), "url": f"sqlite:///{tmp_path}/b.db"}}
    )
    store = open_storage(by_url)
    assert store.url == f"sqlite:///{tmp_path}/b.db" and not store.replicas
    assert missing_storage(by_url) is not None  # reports never create an empty database


def test_the_password_joins_the_log_redactors_list() -> None:
    settings = settings_from_mapping(
        {"storage": {"url": f"postgresql://bot:{PASSWORD}@db.example/parlour"}}
    )
    assert PASSWORD in secret_values(settings)
    assert missing_storage(settings) is None  # the server answers for itself


def test_a_bad_url_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_mapping({"storage": {"url": f"pgsql://bot:{PASSWORD}@db/x"}})
    assert "storage.url" in str(caught.value)
    assert PASSWORD not in str(caught.value)


async def test_check_config_masks_a_password_from_the_environment(tmp_path: Path) -> None:
    text = "storage:\n  url: postgresql://bot:${PG_PASSWORD}@db.example:5432/parlour\n"
    code, output = await check_config(tmp_path, text, OPENAI_API_KEY=SECRET, PG_PASSWORD=PASSWORD)
    assert code == 0, output
    assert "db.example:5432/parlour" in output
    assert PASSWORD not in output


def test_the_jobs_file_sits_beside_the_database_the_url_names(tmp_path: Path) -> None:
    settings = settings_from_mapping({"storage": {"url": f"sqlite:///{tmp_path}/bot/main.db"}})
    assert settings.storage.effective_jobs_path == tmp_path / "bot" / "main.jobs.sqlite"
