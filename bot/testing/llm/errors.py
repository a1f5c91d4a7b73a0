"""How the real API words a 400 for a bad chat request: the message, the ``param`` path in
the API's ``messages.[3].role`` form and the code, raised as :class:`Invalid` by the checks in
:mod:`bot.testing.llm.validation` and :mod:`bot.testing.llm.message_checks`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.testing.llm.wire import ApiError

_NAME_RE = re.compile(r"[a-zA-Z0-9_-]+")
_MAX_NAME = 64

Path = tuple[str | int, ...]


class Invalid(Exception):
    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


def text_path(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def param_of(path: Path) -> str:
    out = ""
    for part in path:
        piece = f"[{part}]" if isinstance(part, int) else part
        out = f"{out}.{piece}" if out else piece
    return out


def fail(message: str, path: Path | None, code: str | None) -> Invalid:
    return Invalid(
        ApiError(400, message, param=None if path is None else param_of(path), code=code)
    )


def kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def wrong_type(path: Path, expected: str, value: object) -> Invalid:
    return fail(
        f"Invalid type for '{text_path(path)}': expected {expected}, but got {kind(value)} "
        "instead.",
        path,
        "invalid_type",
    )


def missing(path: Path) -> Invalid:
    return fail(
        f"Missing required parameter: '{text_path(path)}'.", path, "missing_required_parameter"
    )


def empty(path: Path) -> Invalid:
    return fail(
        f"Invalid '{text_path(path)}': empty array. Expected an array with minimum length 1, "
        "but got an empty array instead.",
        path,
        "empty_array",
    )


def bad_value(path: Path, value: object, allowed: Sequence[str]) -> Invalid:
    quoted = [f"'{a}'" for a in allowed]
    if len(quoted) <= 2:
        listed = " and ".join(quoted)
    else:
        listed = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
    return fail(f"Invalid value: '{value}'. Supported values are: {listed}.", path, "invalid_value")


def check_name(path: Path, value: object) -> None:
    if not isinstance(value, str):
        raise wrong_type(path, "a string", value)
    if len(value) > _MAX_NAME:
        raise fail(
            f"Invalid '{text_path(path)}': string too long. Expected a string with maximum "
            f"length {_MAX_NAME}, but got a string with length {len(value)} instead.",
            path,
            "string_above_max_length",
        )
    if not _NAME_RE.fullmatch(value):
        raise fail(
            f"Invalid '{text_path(path)}': string does not match pattern. Expected a string "
            "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
            path,
            "invalid_value",
        )
