"""Application commands for the fake Discord server: bulk-overwrite validation and the
``data.options`` of a slash-command interaction.

Discord rejects a whole ``PUT .../commands`` when one field is wrong, with a 50035 whose
``errors`` tree points at it (``{"0": {"name": {"_errors": [...]}}}``); a tree that syncs
here has the checks production applies (name pattern and lowercase, description length,
option count and order, choices). When a test "types" a slash command, its options are
converted with the registered option types, so the client's transformers see the wire types
(a user option is an id string plus ``resolved.users``/``members``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from bot.testing.discord.wire import JSONDict, field_error, invalid_form, merge_errors

__all__ = ["Resolver", "build_options", "store_commands", "valid_name", "validate_commands"]

MAX_OPTIONS = 25
MAX_COMMANDS = {1: 100, 2: 15, 3: 15}
OPTION_TYPES = range(1, 12)  # SUB_COMMAND .. ATTACHMENT
CHOICE_TYPES = {3: str, 4: int, 10: float}

# (option type, value given by the test) -> (value as sent, [(resolved section, id, object)]).
Resolver = Callable[[int, Any], tuple[str, list[tuple[str, str, JSONDict]]]]


def valid_name(name: Any, *, chat_input: bool = True) -> bool:
    """``^[-_\\p{L}\\p{N}]{1,32}$``, lowercase where a letter has a lowercase form."""
    if not isinstance(name, str) or not 1 <= len(name) <= 32:
        return False
    if not chat_input:
        return bool(name.strip())
    for char in name:
        if char not in "-_" and unicodedata.category(char)[0] not in "LN":
            return False
    return name == name.lower()


def _check_text(value: Any, path: tuple[str | int, ...], low: int, high: int) -> JSONDict:
    if not isinstance(value, str):
        return field_error(path, "BASE_TYPE_REQUIRED", "This field is required")
    if not low <= len(value) <= high:
        return field_error(
            path, "BASE_TYPE_BAD_LENGTH", f"Must be between {low} and {high} in length."
        )
    return {}


def _check_options(options: Any, path: tuple[str | int, ...], depth: int) -> JSONDict:
    errors: JSONDict = {}
    if options is None:
        return errors
    if not isinstance(options, list):
        return field_error(path, "BASE_TYPE_ARRAY", "Must be an array.")
    if len(options) > MAX_OPTIONS:
        return field_error(
            path, "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_OPTIONS} or fewer in length."
        )
    seen: set[str] = set()
    optional_seen = False
    kinds = set()
    for index, option in enumerate(options):
        here = (*path, index)
        if not isinstance(option, dict):
            merge_errors(
                errors, field_error(here, "DICT_TYPE_CONVERT", "Only dictionaries may be used.")
            )
            continue
        kind = option.get("type")
        if not isinstance(kind, int) or kind not in OPTION_TYPES:
            message = "Value must be one of {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}."
            merge_errors(errors, field_error((*here, "type"), "BASE_TYPE_CHOICES", message))
            continue
        kinds.add(kind in (1, 2))
        name = option.get("name")
        if not valid_name(name):
            merge_errors(
                errors,
                field_error(
                    (*here, "name"), "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"
                ),
            )
        elif name in seen:
            message = f"Option name {name} is already used in these options"
            code = "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS"
            merge_errors(errors, field_error((*here, "name"), code, message))
        seen.add(str(name))
        merge_errors(errors, _check_text(option.get("description"), (*here, "description"), 1, 100))
        if option.get("required"):
            if optional_seen:
                message = "Required options must be placed before non-required options"
                code = "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID"
                merge_errors(errors, field_error((*here, "required"), code, message))
        elif kind not in (1, 2):
            optional_seen = True
        merge_errors(errors, _check_choices(option, kind, here))
        if kind in (1, 2):
            if depth >= (1 if kind == 2 else 2):
                message = "Sub-command groups and sub-commands cannot be nested this deep"
                merge_errors(
                    errors, field_error((*here, "type"), "APPLICATION_COMMAND_INVALID", message)
                )
            merge_errors(
                errors, _check_options(option.get("options"), (*here, "options"), depth + 1)
            )
            nested = option.get("options") or []
            if kind == 2 and any(isinstance(o, dict) and o.get("type") != 1 for o in nested):
                message = "Sub-command groups may only contain sub-commands"
                merge_errors(
                    errors, field_error((*here, "options"), "APPLICATION_COMMAND_INVALID", message)
                )
    if len(kinds) > 1:
        message = "Sub-commands and sub-command groups cannot be mixed with other options"
        merge_errors(errors, field_error(path, "APPLICATION_COMMAND_INVALID", message))
    return errors


def _check_choices(option: JSONDict, kind: int, here: tuple[str | int, ...]) -> JSONDict:
    choices = option.get("choices")
    if not choices:
        return {}
    if kind not in CHOICE_TYPES:
        message = "Choices are only allowed for STRING, INTEGER and NUMBER options"
        return field_error(
            (*here, "choices"), "APPLICATION_COMMAND_OPTION_CHOICES_INVALID", message
        )
    if len(choices) > MAX_OPTIONS:
        message = f"Must be {MAX_OPTIONS} or fewer in length."
        return field_error((*here, "choices"), "BASE_TYPE_MAX_LENGTH", message)
    errors: JSONDict = {}
    for index, choice in enumerate(choices):
        where = (*here, "choices", index)
        merge_errors(errors, _check_text(choice.get("name"), (*where, "name"), 1, 100))
        value = choice.get("value")
        wanted = CHOICE_TYPES[kind]
        ok = isinstance(value, wanted) or (wanted is float and isinstance(value, int))
        if isinstance(value, bool) or not ok:
            message = f"Value must be a valid {wanted.__name__}."
            merge_errors(errors, field_error((*where, "value"), "BASE_TYPE_BAD_TYPE", message))
    return errors


def validate_commands(commands: Any) -> None:
    """Raise the 50035 Discord answers for an invalid bulk overwrite; silent when valid."""
    if not isinstance(commands, list):
        raise invalid_form(field_error((), "BASE_TYPE_ARRAY", "Must be an array."))
    errors: JSONDict = {}
    names: set[tuple[int, str]] = set()
    counts: dict[int, int] = {}
    for index, command in enumerate(commands):
        if not isinstance(command, dict):
            merge_errors(
                errors, field_error((index,), "DICT_TYPE_CONVERT", "Only dictionaries may be used.")
            )
            continue
        kind = command.get("type") or 1
        if kind not in (1, 2, 3, 4):
            message = "Value must be one of {1, 2, 3, 4}."
            merge_errors(errors, field_error((index, "type"), "BASE_TYPE_CHOICES", message))
            continue
        name = command.get("name")
        if not valid_name(name, chat_input=kind == 1):
            merge_errors(
                errors,
                field_error(
                    (index, "name"), "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"
                ),
            )
        elif (kind, name) in names:
            message = "Application command names must be unique"
            merge_errors(
                errors, field_error((index, "name"), "APPLICATION_COMMANDS_DUPLICATE_NAME", message)
            )
        names.add((kind, str(name)))
        counts[kind] = counts.get(kind, 0) + 1
        if kind == 1:
            merge_errors(
                errors, _check_text(command.get("description"), (index, "description"), 1, 100)
            )
            merge_errors(errors, _check_options(command.get("options"), (index, "options"), 0))
        elif command.get("description"):
            message = "Context menu commands cannot have description"
            merge_errors(
                errors, field_error((index, "description"), "APPLICATION_COMMAND_INVALID", message)
            )
    for kind, count in counts.items():
        if count > MAX_COMMANDS.get(kind, 100):
            message = f"Maximum number of application commands reached ({MAX_COMMANDS[kind]})"
            merge_errors(errors, field_error((), "APPLICATION_COMMANDS_TOO_MANY", message))
    if errors:
        raise invalid_form(errors)


def store_commands(
    given: list[JSONDict],
    previous: list[JSONDict],
    guild_id: int | None,
    application_id: int,
    new_id: Callable[[], int],
) -> list[JSONDict]:
    """The commands as Discord stores and returns them after a (validated) bulk overwrite:
    a command keeps its id when one of the same type and name existed, gets a new version."""
    known = {(c["type"], c["name"]): c for c in previous}
    stored = []
    for command in given:
        kind = command.get("type") or 1
        old = known.get((kind, command["name"]))
        permissions = command.get("default_member_permissions")
        record: JSONDict = {
            "id": old["id"] if old else str(new_id()),
            "application_id": str(application_id),
            "version": str(new_id()),
            "type": kind,
            "name": command["name"],
            "name_localizations": command.get("name_localizations"),
            "description": command.get("description") or "",
            "description_localizations": command.get("description_localizations"),
            "default_member_permissions": None if permissions is None else str(permissions),
            "nsfw": bool(command.get("nsfw")),
            "integration_types": command.get("integration_types") or [0],
            "contexts": command.get("contexts"),
            "options": command.get("options") or [],
        }
        if guild_id is None:
            record["dm_permission"] = command.get("dm_permission", True)
        else:
            record["guild_id"] = str(guild_id)
        stored.append(record)
    return stored


def build_options(
    command: JSONDict, name: str, values: Mapping[str, Any] | None, resolve: Resolver
) -> tuple[list[JSONDict], JSONDict]:
    """``data.options`` and ``data.resolved`` for ``/name`` (``"group sub"`` for subcommands)
    with ``values`` by option name, typed by the registered definition.

    Raises ValueError for what the Discord client would never send: unknown or missing
    required options, values outside the choices, a subcommand that does not exist.
    """
    resolved: JSONDict = {}
    path = name.split()[1:]
    definitions: list[JSONDict] = list(command.get("options") or [])
    nested: list[str] = []
    for part in path:
        found = next((o for o in definitions if o["name"] == part and o["type"] in (1, 2)), None)
        if found is None:
            raise ValueError(f"/{command['name']} has no subcommand {part!r}")
        nested.append(part)
        definitions = list(found.get("options") or [])
    if any(o["type"] in (1, 2) for o in definitions):
        raise ValueError(f"/{name} needs a subcommand: {[o['name'] for o in definitions]}")
    given = dict(values or {})
    options: list[JSONDict] = []
    for definition in definitions:
        option_name = definition["name"]
        if option_name not in given:
            if definition.get("required"):
                raise ValueError(f"/{name}: required option {option_name!r} is missing")
            continue
        options.append(_option_value(definition, given.pop(option_name), resolve, resolved))
    if given:
        raise ValueError(f"/{name} has no option(s) {sorted(given)}")
    for part in reversed(nested):
        kind = 1 if part == nested[-1] else 2
        options = [{"name": part, "type": kind, "options": options}]
    return options, resolved


def _option_value(
    definition: JSONDict, value: Any, resolve: Resolver, resolved: JSONDict
) -> JSONDict:
    kind = int(definition["type"])
    name = definition["name"]
    if kind in (6, 7, 8, 9, 11):  # 11: an attachment (the value: an Upload), on the CDN
        wire, entries = resolve(kind, value)
        for section, key, payload in entries:
            resolved.setdefault(section, {})[key] = payload
        return {"name": name, "type": kind, "value": wire}
    converters: dict[int, Callable[[Any], Any]] = {3: str, 4: int, 5: bool, 10: float}
    if kind == 4 and isinstance(value, float) and not value.is_integer():
        raise ValueError(f"option {name!r} is an integer option, got {value!r}")
    converted = converters[kind](value)
    choices = definition.get("choices")
    if choices and converted not in [c["value"] for c in choices]:
        raise ValueError(f"option {name!r} must be one of {[c['value'] for c in choices]}")
    low, high = definition.get("min_value"), definition.get("max_value")
    if kind in (4, 10) and (
        (low is not None and converted < low) or (high is not None and converted > high)
    ):
        raise ValueError(f"option {name!r}: {converted!r} is outside [{low}, {high}]")
    return {"name": name, "type": kind, "value": converted}
