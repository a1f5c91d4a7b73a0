"""The job stores' database errors, said without the storage password.

SQLAlchemy's messages may carry the connection string: :func:`job_store_errors` turns them into
a :class:`StoreError` naming the URL with its password masked, and does not chain the original,
so a traceback does not print it either. (Used on PostgreSQL, where SQLAlchemy is loaded; this
module loads it only when a block runs.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bot.config.storage_url import StorageURL
from bot.errors import StoreError

__all__ = ["job_store_errors", "redacted"]


@contextmanager
def job_store_errors(where: StorageURL) -> Iterator[None]:
    """Database errors as a :class:`StoreError` naming the URL without its password."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except SQLAlchemyError as exc:
        raise StoreError(f"scheduler job store {where.shown()}: {redacted(exc, where)}") from None


def redacted(exc: BaseException, where: StorageURL) -> str:
    """``exc``'s message with the storage password masked (for logs and errors)."""
    message = str(exc).split("\n(Background on this error", 1)[0]
    password = where.password()
    return message.replace(password, "***") if password else message
