"""The bot never sends a tool schema the chat API refuses: an MCP tool whose ``inputSchema`` has
``anyOf`` (or the like) at its top is left out by the catalog, its siblings still offered, and
whatever the catalog lets through passes the fake's OpenAI-faithful schema checks."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import openai
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config import MCPServerSettings
from bot.mcp.catalog import build_catalog, chat_schema
from bot.plugins.external import ExternalCall
from bot.plugins.output import ToolOutput
from bot.testing import FakeLLM
from bot.testing.llm.validation import validate_chat_request

USER: list[Any] = [{"role": "user", "content": "hello there"}]
SERVER = MCPServerSettings(command=("demo",))


def no_call(remote: str, name: str) -> ExternalCall:
    async def call(arguments: dict[str, Any]) -> ToolOutput:
        raise AssertionError("not called here")

    return call


def request(parameters: dict[str, Any]) -> dict[str, Any]:
    function = {"name": "t", "parameters": parameters}
    return {
        "model": "gpt-4o-mini",
        "messages": USER,
        "tools": [{"type": "function", "function": function}],
    }


async def test_a_top_level_anyof_tool_is_left_out_and_its_sibling_offered(
    fake_llm: FakeLLM,
) -> None:
    listed = [
        types.Tool(
            name="pick",
            input_schema={"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
        ),
        types.Tool(
            name="echo",
            description="Repeat the text back.",
            input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        ),
    ]
    catalog = build_catalog("demo", SERVER, listed, taken=set(), call=no_call)
    assert [tool.name for tool in catalog.tools] == ["echo"]
    [skipped] = catalog.skipped
    assert skipped.name == "pick" and "anyOf at the top level" in skipped.reason

    # what the bot would send is taken; the left-out schema would have been refused
    async with openai.AsyncOpenAI(
        base_url=fake_llm.base_url, api_key="sk-test", max_retries=0
    ) as sdk:
        offered: Any = [tool.definition() for tool in catalog.tools]
        done = await sdk.chat.completions.create(model="gpt-4o-mini", messages=USER, tools=offered)
        assert done.choices[0].finish_reason == "stop"
        refused = validate_chat_request(request(dict(listed[0].input_schema)))
        assert refused is not None and refused.code == "invalid_function_parameters"


JSON_LEAF = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
KEYS = st.sampled_from(
    ["type", "properties", "required", "anyOf", "oneOf", "allOf", "enum", "not", "description"]
)
TYPES = st.sampled_from(["object", "array", "string"]) | JSON
SCHEMAS = st.dictionaries(KEYS, TYPES, max_size=4) | st.dictionaries(
    KEYS, st.just({"type": "string"}) | st.just([{"type": "object"}]), max_size=3
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a loaded machine
@given(SCHEMAS)
def test_every_schema_the_catalog_passes_is_one_the_api_takes(schema: dict[str, Any]) -> None:
    out = chat_schema(schema)
    if isinstance(out, dict):
        assert validate_chat_request(request(out)) is None
