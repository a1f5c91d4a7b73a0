"""An MCP server's tool list turned into the registry's tools (``bot.mcp.catalog``), and an
external tool's argument check (``ExternalTool.problems``): pure logic, by properties and by the
schemas a real ``MCPServer`` generates."""

from __future__ import annotations

import asyncio
import http.server
import re
import string
import threading
from typing import Any, Literal

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

from bot.config import MCPServerSettings
from bot.mcp.catalog import MAX_DESCRIPTION, Catalog, build_catalog, chat_name, chat_schema, picked
from bot.plugins.declare import Permission
from bot.plugins.external import ExternalCall, ExternalTool
from bot.plugins.output import ToolResult

API_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
OBJECT: dict[str, Any] = {"type": "object", "properties": {}}

valid_names = st.from_regex(API_NAME, fullmatch=True)
patterns = st.text(alphabet="ab*?", min_size=1, max_size=4)
tool_names = st.text(alphabet="ab", min_size=1, max_size=3)


def server(**fields: Any) -> MCPServerSettings:
    return MCPServerSettings(command=["x"], **fields)


def tool(name: str, schema: Any = None, **fields: Any) -> types.Tool:
    return types.Tool(name=name, input_schema=OBJECT if schema is None else schema, **fields)


calls: list[tuple[str, str]] = []


def recorder(remote: str, shown: str) -> ExternalCall:
    """The ``call`` factory: records which remote tool each offered name runs."""
    calls.append((remote, shown))

    async def call(arguments: dict[str, Any]) -> ToolResult:
        return f"{remote} ran with {arguments}"

    return call


def catalog_of(
    listed: list[types.Tool],
    settings_: MCPServerSettings | None = None,
    taken: frozenset[str] = frozenset(),
) -> Catalog:
    return build_catalog("srv", settings_ or server(), listed, taken=taken, call=recorder)


class Options(BaseModel):
    depth: int = 1


demo = MCPServer("schemas")


@demo.tool()
def search(
    query: str,
    limit: int = 3,
    tags: list[str] | None = None,
    order: Literal["new", "old"] = "new",
    options: Options | None = None,
) -> str:
    """Search."""
    return query


@demo.tool()
def nothing() -> str:
    return ""


def generated_schemas() -> list[dict[str, Any]]:
    """What a real MCPServer sends as inputSchema: $defs/$ref, anyOf and enum in properties."""
    return [t.input_schema for t in asyncio.run(demo.list_tools())]


# -- names ----------------------------------------------------------------------------------


@given(st.text())
def test_chat_name_is_always_a_name_the_chat_api_takes(name: str) -> None:
    assert API_NAME.fullmatch(chat_name(name))


@given(valid_names)
def test_chat_name_keeps_a_valid_name(name: str) -> None:
    assert chat_name(name) == name
    assert chat_name(chat_name(name)) == chat_name(name)


@given(st.text(min_size=65), st.text(min_size=65))
def test_two_long_names_stay_apart(one: str, other: str) -> None:
    if one != other:
        assert chat_name(one) != chat_name(other)


def test_a_long_name_keeps_its_start() -> None:
    name = "x" * 70
    assert chat_name(name).startswith("x" * 55) and len(chat_name(name)) == 64


# -- schemas --------------------------------------------------------------------------------


def test_schemas_an_mcpserver_generates_are_passed_unchanged() -> None:
    for schema in generated_schemas():
        assert chat_schema(schema) == schema


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ([], "not a JSON object"),
        ("object", "not a JSON object"),
        ({"type": "array", "items": {}}, "type 'array'"),
        ({"type": ["object", "null"]}, "type ['object', 'null']"),
        ({"oneOf": [OBJECT, OBJECT]}, "oneOf at the top level"),
        ({"type": "object", "anyOf": [OBJECT]}, "anyOf at the top level"),
        ({"type": "object", "allOf": [OBJECT]}, "allOf at the top level"),
        ({"type": "object", "enum": [{}]}, "enum at the top level"),
        ({"type": "object", "not": {"required": ["a"]}}, "not at the top level"),
        ({"type": "object", "properties": []}, "properties is not an object"),
        ({"type": "object", "properties": {"a": {"type": 5}}}, "not a valid JSON Schema"),
        ({"type": "object", "required": "a"}, "not a valid JSON Schema"),
        ({"type": "object", "$schema": ["x"]}, "$schema is not a string"),
    ],
)
def test_schemas_the_chat_api_would_refuse_are_refused_with_a_reason(schema: Any, why: str) -> None:
    reason = chat_schema(schema)
    assert isinstance(reason, str) and why in reason


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "description": st.text(max_size=10),
            "title": st.text(max_size=10),
            "required": st.lists(st.text(max_size=3), unique=True, max_size=3),
            "additionalProperties": st.booleans(),
        },
    )
)
def test_type_and_properties_are_added_when_absent(schema: dict[str, Any]) -> None:
    out = chat_schema(schema)
    assert isinstance(out, dict)
    assert out == {**schema, "type": "object", "properties": {}}
    assert "type" not in schema  # the server's own dict is not changed


# -- allow / deny ---------------------------------------------------------------------------


@given(tool_names, st.lists(patterns, max_size=3), st.lists(patterns, max_size=3))
def test_deny_wins_over_allow(name: str, allow: list[str], deny: list[str]) -> None:
    chosen = picked(name, server(allow=allow, deny=deny))
    denied = any(re.fullmatch(_regex(p), name) for p in deny)
    allowed = any(re.fullmatch(_regex(p), name) for p in allow)
    assert chosen == (allowed and not denied)


def _regex(pattern: str) -> str:
    return pattern.replace("?", ".").replace("*", ".*")


def test_allow_and_deny_take_fnmatch_patterns() -> None:
    settings_ = server(allow=["read_*", "list?"], deny=["read_secret*"])
    names = ["read_file", "read_secrets", "lists", "list", "write_file", "READ_file"]
    assert [n for n in names if picked(n, settings_)] == ["read_file", "lists"]
    assert picked("anything", server())  # allow defaults to every tool


# -- the catalog ----------------------------------------------------------------------------


def test_names_held_elsewhere_get_the_server_prefix() -> None:
    catalog = catalog_of(
        [tool("clock"), tool("lookup"), tool("search")], taken=frozenset({"clock", "search"})
    )
    assert [t.name for t in catalog.tools] == ["srv_clock", "lookup", "srv_search"]
    assert [t.remote_name for t in catalog.tools] == ["clock", "lookup", "search"]
    assert {t.source for t in catalog.tools} == {"mcp:srv"}


def test_two_tools_that_clean_to_one_name_both_stay_reachable() -> None:
    calls.clear()
    catalog = catalog_of([tool("a.b"), tool("a b")])
    assert [t.name for t in catalog.tools] == ["a_b", "srv_a_b"]
    assert calls == [("a.b", "a_b"), ("a b", "srv_a_b")]


def test_a_prefixed_name_that_is_taken_too_is_left_out_with_a_reason() -> None:
    catalog = catalog_of([tool("x")], taken=frozenset({"x", "srv_x"}))
    assert catalog.tools == ()
    assert [(s.name, "taken" in s.reason) for s in catalog.skipped] == [("x", True)]


@given(st.lists(tool_names, unique=True, max_size=6), st.sets(tool_names | st.just("srv_a")))
def test_offered_names_are_unique_and_never_held_elsewhere(
    names: list[str], taken: set[str]
) -> None:
    catalog = catalog_of([tool(n) for n in names], taken=frozenset(taken))
    offered = [t.name for t in catalog.tools]
    assert len(set(offered)) == len(offered)
    assert not set(offered) & taken
    assert len(catalog.tools) + len(catalog.skipped) == len(names)


def test_admin_only_true_makes_every_tool_an_admin_tool() -> None:
    catalog = catalog_of([tool("a"), tool("b")], server(admin_only=True))
    assert {t.permission for t in catalog.tools} == {Permission.ADMINS}


@given(st.lists(tool_names, unique=True, max_size=5), st.lists(tool_names, max_size=3))
def test_admin_only_names_make_exactly_those_admin_tools(
    names: list[str], admins: list[str]
) -> None:
    catalog = catalog_of([tool(n) for n in names], server(admin_only=admins))
    for offered in catalog.tools:
        expected = Permission.ADMINS if offered.remote_name in admins else Permission.EVERYONE
        assert offered.permission is expected


def test_admin_only_false_and_a_pattern() -> None:
    assert {t.permission for t in catalog_of([tool("a")]).tools} == {Permission.EVERYONE}
    catalog = catalog_of([tool("wipe_all"), tool("read")], server(admin_only="wipe_*"))
    assert [(t.name, t.permission) for t in catalog.tools] == [
        ("wipe_all", Permission.ADMINS),
        ("read", Permission.EVERYONE),
    ]


def test_tools_with_refused_schemas_are_skipped_with_their_reasons() -> None:
    catalog = catalog_of(
        [
            tool("good"),
            tool("choice", {"oneOf": [OBJECT]}),
            tool("broken", {"type": "object", "properties": {"a": {"type": 5}}}),
        ]
    )
    assert [t.name for t in catalog.tools] == ["good"]
    reasons = {s.name: s.reason for s in catalog.skipped}
    assert set(reasons) == {"choice", "broken"}
    assert "oneOf" in reasons["choice"] and "valid JSON Schema" in reasons["broken"]


def test_denied_tools_are_neither_offered_nor_reported() -> None:
    catalog = catalog_of([tool("read"), tool("wipe", {"oneOf": []})], server(deny=["wipe"]))
    assert [t.name for t in catalog.tools] == ["read"] and catalog.skipped == ()


@given(st.text(max_size=3000), st.none() | st.text(max_size=50))
def test_the_description_is_capped(description: str, title: str | None) -> None:
    catalog = catalog_of([tool("t", description=description, title=title)])
    sent = catalog.tools[0].definition()["function"].get("description", "")
    assert len(sent) <= MAX_DESCRIPTION
    assert sent == (description or title or "").strip()[:MAX_DESCRIPTION]


def test_the_server_settings_travel_with_each_tool() -> None:
    catalog = catalog_of([tool("t")], server(timeout=7, max_output=500))
    assert (catalog.tools[0].timeout, catalog.tools[0].max_output) == (7, 500)


async def test_the_call_runs_the_remote_tool() -> None:
    catalog = catalog_of([tool("a.b")], taken=frozenset({"a_b"}))
    assert await catalog.tools[0].call({"q": 1}) == "a.b ran with {'q': 1}"


# -- ExternalTool.problems --------------------------------------------------------------------


def external(schema: dict[str, Any]) -> ExternalTool:
    return ExternalTool(
        name="t", description="", schema=schema, call=recorder("t", "t"), source="x"
    )


def test_arguments_that_fit_have_no_problems() -> None:
    schema = generated_schemas()[0]
    tool_ = external(schema)
    assert tool_.problems({"query": "q", "options": {"depth": 2}, "order": "old"}) is None


def test_problems_name_the_path_and_the_message() -> None:
    tool_ = external(generated_schemas()[0])
    assert tool_.problems({}) == "arguments: 'query' is a required property"
    assert tool_.problems({"query": "q", "limit": "3"}) == "limit: '3' is not of type 'integer'"
    nested = tool_.problems({"query": "q", "tags": ["a", 5]})
    assert nested is not None and nested.startswith("tags: ")
    assert tool_.problems([]) == "arguments: [] is not of type 'object'"


def test_problems_are_capped() -> None:
    schema = {
        "type": "object",
        "properties": {c: {"type": "integer"} for c in string.ascii_lowercase},
    }
    text = external(schema).problems({c: "x" * 500 for c in string.ascii_lowercase})
    assert text is not None
    parts = text.split("; ")
    assert [p.split(":")[0] for p in parts] == list("abcde")  # five, in path order
    assert all(len(p) <= len("a: ") + 201 for p in parts)
    assert all(p.endswith("…") for p in parts)


@settings(max_examples=50)
@given(st.dictionaries(st.sampled_from("abc"), st.integers() | st.text(max_size=5)))
def test_problems_is_none_exactly_when_the_arguments_fit(arguments: dict[str, Any]) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    fits = isinstance(arguments.get("a"), int)
    assert (external(schema).problems(arguments) is None) == fits


def test_a_ref_outside_the_schema_is_reported_not_fetched() -> None:
    """A server's ``$ref`` to a URL must not make the bot fetch it (jsonschema's default
    registry would, from wherever the bot runs)."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"type": "integer"}')

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_port}/x.json"
        schema = {"type": "object", "properties": {"a": {"$ref": url}}}
        problems = external(schema).problems({"a": "text"})
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert problems == f"its schema refers to {url!r}, which it does not contain"
    assert hits == []
    missing = {"type": "object", "properties": {"a": {"$ref": "#/$defs/gone"}}}
    assert "$defs/gone" in (external(missing).problems({"a": 1}) or "")
