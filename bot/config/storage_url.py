"""``storage.url``: which backend, where, and how to show it without its password.

Two forms, as operators write them elsewhere (SQLAlchemy, libpq):

* ``sqlite:///data/parlour.db`` (relative to the working directory), ``sqlite:////abs/x.db``
  (absolute), ``sqlite:///:memory:``;
* ``postgresql://user:pass@host:port/db`` (``postgres://`` too), with libpq's query parameters
  (``sslmode=require`` ...) passed on, plus one of ours: ``schema=NAME`` keeps every table of this
  bot in that PostgreSQL schema (created if missing), so several bots or test runs share one
  database without seeing each other.

The password may come from the environment (``${PGPASSWORD}`` in config.yaml); :meth:`shown`
is the only form that reaches a log, an error or a report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from bot.errors import ConfigError

__all__ = ["StorageURL", "parse_storage_url", "sqlite_url"]

_OURS = frozenset({"pool_size"})  # Parlour's own query parameters, read by the backend
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


@dataclass(frozen=True, slots=True)
class StorageURL:
    """A parsed ``storage.url``. ``path`` for SQLite; ``dsn`` (libpq form, without ``schema``)
    and ``schema`` for PostgreSQL."""

    kind: Literal["sqlite", "postgresql"]
    path: Path | None = None
    dsn: str | None = None
    schema: str | None = None

    @property
    def is_postgresql(self) -> bool:
        return self.kind == "postgresql"

    def shown(self) -> str:
        """The URL fit for logs and errors: any password replaced by ``***``."""
        if self.kind == "sqlite":
            return f"sqlite:///{self.path}"
        assert self.dsn is not None
        parts = urlsplit(self.dsn)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}:***@{host}" if ":" in userinfo else f"{user}@{host}"
        query = [(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(parts.query)]
        if self.schema:
            query.append(("schema", self.schema))
        return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query), ""))

    def password(self) -> str | None:
        """The password, for the log redactor's list (never to be printed)."""
        if self.dsn is None:
            return None
        parts = urlsplit(self.dsn)
        found = unquote(parts.password) if parts.password else None
        for key, value in parse_qsl(parts.query):
            if key.lower() == "password" and value:
                found = value
        return found

    def sqlalchemy_url(self) -> str:
        """The same database for SQLAlchemy (the scheduler's job store): psycopg for
        PostgreSQL, the stdlib driver for SQLite."""
        if self.kind == "sqlite":
            return f"sqlite:///{self.path}"
        assert self.dsn is not None
        parts = urlsplit(self.dsn)
        # libpq refuses parameters it does not know: ours (pool_size) stay with asyncpg
        query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k not in _OURS])
        return urlunsplit(("postgresql+psycopg", parts.netloc, parts.path, query, ""))


def sqlite_url(path: str | Path) -> str:
    """``storage.path`` as a URL."""
    return f"sqlite:///{path}"


def parse_storage_url(url: str) -> StorageURL:
    """Parse ``storage.url``; a :class:`~bot.errors.ConfigError` that never shows the password."""
    text = url.strip()
    scheme, sep, rest = text.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise ConfigError(
            "storage.url must look like sqlite:///data/parlour.db or "
            "postgresql://user:password@host:5432/dbname"
        )
    if scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise ConfigError(
                "storage.url: an SQLite URL names a file after three slashes: "
                "sqlite:///data/parlour.db (relative) or sqlite:////srv/parlour.db (absolute)"
            )
        return StorageURL("sqlite", path=Path(unquote(rest[1:])))
    if scheme in ("postgresql", "postgres"):
        parts = urlsplit("postgresql://" + rest)
        if not parts.hostname and "host=" not in parts.query:
            raise ConfigError("storage.url: a PostgreSQL URL needs a host: postgresql://host/db")
        query = parse_qsl(parts.query, keep_blank_values=True)
        schema = next((v for k, v in query if k == "schema"), None)
        if schema is not None and not _SCHEMA_NAME.match(schema):
            raise ConfigError(
                f"storage.url: schema={schema!r} is not a plain PostgreSQL name "
                "(letters, digits and _, not starting with a digit)"
            )
        kept = urlencode([(k, v) for k, v in query if k != "schema"], quote_via=quote)
        dsn = urlunsplit(("postgresql", parts.netloc, parts.path, kept, ""))
        return StorageURL("postgresql", dsn=dsn, schema=schema)
    raise ConfigError(
        f"storage.url: unknown scheme {scheme!r}; use sqlite:///path.db or postgresql://..."
    )
