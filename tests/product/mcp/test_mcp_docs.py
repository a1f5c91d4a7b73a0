"""docs/mcp.md cannot drift: its config examples load, and its key table is MCPServerSettings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.config import MCPServerSettings, secret_values, settings_from_mapping

PAGE = Path(__file__).resolve().parents[3] / "docs" / "mcp.md"


def _example(name: str) -> dict[str, Any]:
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(rf"<!-- mcp-config: {name} -->\n```yaml\n(.*?)```", text, re.DOTALL)
    assert found, f"docs/mcp.md lost its {name} example"
    data = yaml.safe_load(found.group(1))
    assert isinstance(data, dict)
    return data


def test_the_stdio_example_loads_and_its_env_stays_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCH_API_KEY", "sk-search-123456")
    settings = settings_from_mapping(_example("stdio"))
    servers = settings.mcp.servers
    assert {name: s.transport for name, s in servers.items()} == {
        "docs": "stdio",
        "search": "stdio",
    }
    assert servers["search"].env["SEARCH_API_KEY"].get_secret_value() == "sk-search-123456"
    assert "sk-search-123456" in secret_values(settings)
    assert "sk-search-123456" not in repr(settings)


def test_the_http_example_loads_and_its_header_stays_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TICKETS_TOKEN", "tok-abcdef-987")
    settings = settings_from_mapping(_example("http"))
    tickets = settings.mcp.servers["tickets"]
    assert tickets.transport == "http"
    assert tickets.headers["Authorization"].get_secret_value() == "Bearer tok-abcdef-987"
    assert tickets.admin_only == ("close_ticket", "delete_*")
    assert "Bearer tok-abcdef-987" in secret_values(settings)
    assert "tok-abcdef-987" not in repr(settings)


def test_the_demo_example_loads() -> None:
    demo = settings_from_mapping(_example("demo")).mcp.servers["demo"]
    assert demo.command is not None and demo.command[1:] == ("-m", "bot.testing.mcp_demo")


def test_the_key_table_is_every_key_with_its_default() -> None:
    text = PAGE.read_text(encoding="utf-8").split("### Every key", 1)[1].split("\n\n`", 1)[0]
    table = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", text, re.MULTILINE))
    fields = MCPServerSettings.model_fields
    assert list(table) == list(fields)
    for key, shown in table.items():
        field = fields[key]
        default = field.default_factory() if field.default_factory else field.default  # type: ignore[call-arg]
        written = None if shown.strip() == "none" else yaml.safe_load(shown.strip().strip("`"))
        expected = list(default) if isinstance(default, tuple) else default
        assert written == expected, key
