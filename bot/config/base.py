"""The base of every config section: unknown keys are errors, values are frozen."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, SecretStr


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def env_secret(name: str) -> SecretStr | None:
    value = os.environ.get(name)
    return SecretStr(value) if value else None


def looks_secret(key: str) -> bool:
    """A key whose value is treated as a secret wherever it appears (tokens, keys, passwords)."""
    return any(word in key.lower() for word in ("token", "key", "secret", "password"))
