"""Advisory lock keys: one per purpose *and schema*, since several bots may share a database
(each in its own schema) and must never wait for, or skip the work of, one another."""

from __future__ import annotations

import hashlib

__all__ = ["advisory_key"]


def advisory_key(schema: str, purpose: str) -> int:
    """A ``pg_advisory_*lock(bigint)`` key for ``purpose`` in ``schema``, the same in every
    process and Python version."""
    digest = hashlib.blake2b(f"parlour:{schema}:{purpose}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)
