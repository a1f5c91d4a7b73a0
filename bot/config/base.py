"""The base of every config section: unknown keys are errors, values are frozen."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, SecretStr


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def env_secret(name: str) -> SecretStr | None:
    value = os.environ.get(name)
    return SecretStr(value) if value else None
