"""The base of every config section: unknown keys are errors, values are frozen."""

from __future__ import annotations

import os
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, SecretStr


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FixableValueError(ValueError):
    """A validator's complaint that knows its fix: the message says only what is wrong, and
    the fix reaches :class:`~bot.errors.ConfigError` (``doctor``'s fix line) apart from it."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.fix = fix


class ShownValueError(ValueError):
    """A validator's complaint about a value it has checked is not a secret (a typo close to a
    real time zone's name): the error may quote it, where other complaints have what was given
    masked. Raise it only after such a check; anything else is a plain ``ValueError``."""


def env_secret(name: str) -> SecretStr | None:
    value = os.environ.get(name)
    return SecretStr(value) if value else None


def looks_secret(key: str) -> bool:
    """A key whose value is treated as a secret wherever it appears (tokens, keys, passwords)."""
    return any(word in key.lower() for word in ("token", "key", "secret", "password"))


@dataclass(frozen=True, slots=True)
class UnsetVariable:
    """A ``${VAR}`` whose variable was not set, and where in the config it was asked for."""

    path: str  # as written in messages: ``http.admin_tokens[0]``
    name: str

    @property
    def section(self) -> str:
        """The top-level key it is under (``http``): what a command must not need."""
        return self.path.split(".", 1)[0].split("[", 1)[0]

    def overlaps(self, path: str) -> bool:
        """True when this value is at ``path``, inside it, or holds it."""
        inner, outer = sorted((path, self.path), key=len)
        return outer == inner or outer.startswith((f"{inner}.", f"{inner}["))

    def __str__(self) -> str:
        return f"{self.path}: environment variable {self.name} is not set"
