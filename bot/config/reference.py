"""``docs/configuration-reference.md``, written from the pydantic models so it cannot drift.

Every key of every section (the adapters' ``telegram:`` and ``discord:`` included) is one row:
its path, type and limits, default and ``Field(description=...)``; a list of sections shows one
item's keys (``plugins[].module``), a mapping of sections one entry's (``mcp.servers.*.url``). A
field without a description is an error, not an empty cell.

    python -m bot.config.reference          # rewrite the file (also: make docs)
    python -m bot.config.reference --check  # exit 1 if the committed file is stale
"""

from __future__ import annotations

import argparse
import enum
import importlib
import json
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from bot.config.settings import DEFAULT_PLUGINS, PlatformSettings, Settings

REFERENCE_PATH = Path(__file__).resolve().parents[2] / "docs" / "configuration-reference.md"
REGENERATE = "python -m bot.config.reference  (or: make docs)"

_HEADER = f"""# Configuration reference

<!-- GENERATED from the pydantic models by `{REGENERATE.split("  ")[0]}`; do not edit.
     tests/product/app/test_docs.py fails when this file is stale. -->

Every key `config.yaml` accepts, section by section: its type and limits, its default, and what it
does. Every key is optional. Strings may use `${{VAR}}` and `${{VAR:-default}}`; unknown keys are
errors. For a guided tour see [configuration.md](configuration.md); `config.yaml` shows the common
keys with comments.
"""


@dataclass(frozen=True)
class Row:
    key: str
    type: str
    default: str
    description: str


def sections() -> list[tuple[str, type[BaseModel]]]:
    """Top-level sections in file order; platform sections come from their adapters' models.

    The core never imports an adapter: like the entry point, it finds each one by the module
    name in ``adapters:`` and reads the ``<Platform>Settings`` model of its ``settings`` module.
    """
    adapters: dict[str, str] = _default_value(Settings.model_fields["adapters"])
    found: list[tuple[str, type[BaseModel]]] = []
    for name, field in Settings.model_fields.items():
        model = _model_of(field.annotation)
        if model is PlatformSettings:  # TelegramSettings, DiscordSettings, HTTPSettings
            names = (f"{name.capitalize()}Settings", f"{name.upper()}Settings")
            found.append((name, _model_in(f"{adapters[name]}.settings", *names)))
        elif model is not None and get_origin(field.annotation) is None:
            found.append((name, model))
    return found


def rows() -> list[tuple[str, list[Row]]]:
    """``(section title, rows)`` for the whole config; top-level scalars form a section too."""
    top = [
        row
        for name, field in Settings.model_fields.items()
        if not _is_section(name, field)
        for row in _rows(name, field)
    ]
    return [
        *((name, list(_walk(model, name))) for name, model in sections()),
        ("top-level keys", top),
        *_plugin_sections(),
    ]


def _plugin_sections() -> list[tuple[str, list[Row]]]:
    """The built-in plugins' ``settings:``, from each plugin's own ``Settings`` model."""
    found = []
    for module in DEFAULT_PLUGINS:
        model = getattr(importlib.import_module(module), "Settings", None)
        if isinstance(model, type) and issubclass(model, BaseModel):
            found.append((f"{module} settings", list(_walk(model, "settings"))))
    return found


def _model_in(module: str, *names: str) -> type[BaseModel]:
    loaded = importlib.import_module(module)
    for name in names:
        model = getattr(loaded, name, None)
        if isinstance(model, type) and issubclass(model, BaseModel):
            return model
    raise ValueError(f"{module} has no pydantic model {' or '.join(names)}")


def missing_descriptions() -> list[str]:
    return [row.key for _, table in rows() for row in table if not row.description]


def render() -> str:
    missing = missing_descriptions()
    if missing:
        raise ValueError("config fields without a description: " + ", ".join(missing))
    out = [_HEADER]
    for title, table in rows():
        if title == "top-level keys":
            out.append("\n## Top-level keys\n")
        elif title.endswith(" settings"):
            module = title.removesuffix(" settings")
            out.append(f"\n## Plugin `{module}`\n")
            out.append(f"In `plugins:` as `{{module: {module}, settings: {{...}}}}`.\n")
        else:
            out.append(f"\n## `{title}`\n")
        out.append("| key | type | default | description |")
        out.append("|---|---|---|---|")
        out.extend(
            f"| `{r.key}` | {_cell(r.type)} | {_cell(r.default)} | {_cell(r.description)} |"
            for r in table
        )
    return "\n".join(out) + "\n"


def _is_section(name: str, field: FieldInfo) -> bool:
    return any(name == section for section, _ in sections())


def _walk(model: type[BaseModel], prefix: str) -> Iterator[Row]:
    for name, field in model.model_fields.items():
        yield from _rows(f"{prefix}.{name}", field)


def _rows(key: str, field: FieldInfo) -> Iterator[Row]:
    annotation = field.annotation
    nested = _model_of(annotation)
    if nested is not None and get_origin(annotation) is None:
        yield from _walk(nested, key)  # a sub-section: its keys, not itself
        return
    yield Row(key, _type(annotation, field), _default(field), field.description or "")
    if nested is not None and get_origin(annotation) is tuple:
        yield from _walk(nested, f"{key}[]")  # a list of sections: the keys of one item
    value = get_args(annotation)[-1] if get_origin(annotation) is dict else None
    if isinstance(value, type) and issubclass(value, BaseModel):
        yield from _walk(value, f"{key}.*")  # a mapping of sections: the keys of one entry


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) is tuple:
        for arg in get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    return None


def _type(annotation: Any, field: FieldInfo) -> str:
    text = _type_name(annotation)
    limits = []
    for item in field.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if isinstance(item, getattr(annotated_types, attr.capitalize())):
                limits.append(f"{sign} {getattr(item, attr)}")
    return f"{text}, {' and '.join(limits)}" if limits else text


def _type_name(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation is type(None):
        return "null"
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args)
    if origin is Literal:
        return " or ".join(f"`{a}`" for a in args)
    if origin is tuple:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"mapping of {_type_name(args[0])} to {_type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " or ".join(f"`{m.value}`" for m in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    names = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path"}
    if annotation is SecretStr:
        return "secret string"
    if annotation is Any:
        return "any"
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default(field: FieldInfo) -> str:
    extra = field.json_schema_extra
    if isinstance(extra, dict) and "shown_default" in extra:
        return str(extra["shown_default"])  # read from the environment: say which variable
    if field.default_factory is None and field.default is PydanticUndefined:
        return "required"
    return f"`{json.dumps(_plain(_default_value(field)), ensure_ascii=False)}`"


def _default_value(field: FieldInfo) -> Any:
    if field.default_factory is not None:
        return field.default_factory()  # type: ignore[call-arg]
    return field.default


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        dumped = value.model_dump(mode="json", exclude_defaults=True)
        module = dumped.get("module")
        return module if set(dumped) == {"module"} else dumped
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def _cell(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot.config.reference", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    parser.add_argument("--output", type=Path, default=REFERENCE_PATH)
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            sys.stderr.write(f"{args.output} is stale; regenerate it with: {REGENERATE}\n")
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    sys.stdout.write(f"wrote {args.output}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
