"""An MCP tool result as the model reads it (``bot.mcp.results.to_output``): text, compact JSON,
images only where the model takes them, links, and errors said once."""

from __future__ import annotations

import base64
from typing import Any

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.mcp.results import ResultPolicy, to_output
from bot.platform.media import AttachmentKind, data_url, sniff_image_type
from bot.plugins.output import ToolOutput

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(56)  # a program, not a picture
SEEING = ResultPolicy(vision=True, max_images=4, max_image_bytes=1_000_000)
BLIND = ResultPolicy(vision=False, max_images=4, max_image_bytes=1_000_000)

Block = (
    types.TextContent
    | types.ImageContent
    | types.AudioContent
    | types.ResourceLink
    | types.EmbeddedResource
)


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def image(data: bytes = PNG, mime: str = "image/png") -> types.ImageContent:
    return types.ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type=mime)


def result(*content: Block, structured: Any = None, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=list(content), structured_content=structured, is_error=is_error
    )


def out(*content: Block, policy: ResultPolicy = SEEING, **fields: Any) -> ToolOutput:
    return to_output("tool", result(*content, **fields), policy)


# -- text and JSON --------------------------------------------------------------------------


def test_text_passes_as_text() -> None:
    assert out(text("it is sunny"), text("and warm")) == ToolOutput("it is sunny\nand warm")


def test_an_empty_result_says_done() -> None:
    assert out() == ToolOutput("done")


def test_structured_content_is_compact_json_and_its_text_twin_is_dropped() -> None:
    weather = {"city": "Oslo", "temp_c": 21.5, "note": "é"}
    pretty = text('{\n  "city": "Oslo",\n  "temp_c": 21.5,\n  "note": "\\u00e9"\n}')
    assert out(pretty, structured=weather).text == '{"city":"Oslo","temp_c":21.5,"note":"é"}'


def test_structured_content_beside_other_text_keeps_both() -> None:
    shown = out(text("two results"), structured={"hits": [1, 2]}).text
    assert shown == 'two results\n{"hits":[1,2]}'


@pytest.mark.parametrize(
    ("said", "value"),
    [("echo: hi", "echo: hi"), ("5", 5), ('{\n  "a": 1\n}', {"a": 1}), ("[1, 2]", [1, 2])],
)
def test_a_wrapped_primitive_is_just_its_text(said: str, value: Any) -> None:
    assert out(text(said), structured={"result": value}).text == said


def test_a_result_key_whose_text_differs_is_kept_as_json() -> None:
    assert out(text("summary"), structured={"result": "x"}).text == 'summary\n{"result":"x"}'


# -- images ---------------------------------------------------------------------------------


def test_an_image_reaches_the_model_with_vision_on() -> None:
    shown = out(text("the chart:"), image())
    assert shown.text == "the chart:\n[image: tool image, 1x1, 70 bytes] (shown to you below)"
    [attachment] = shown.images
    assert (attachment.kind, attachment.data, attachment.mime_type) == (
        AttachmentKind.IMAGE,
        PNG,
        "image/png",
    )


@pytest.mark.parametrize(
    ("block", "policy", "why"),
    [
        (image(), BLIND, "(not shown: image input is off for this bot)"),
        (image(mime="image/bmp"), SEEING, "(not shown: the model takes no image/bmp)"),
        (image(ELF), SEEING, "(not shown: not a JPEG, PNG, GIF or WebP image)"),
        (
            image(),
            ResultPolicy(vision=True, max_images=4, max_image_bytes=len(PNG) - 1),
            "(not shown: over llm.max_image_bytes)",
        ),
    ],
)
def test_an_image_the_model_cannot_take_becomes_a_line_saying_why(
    block: types.ImageContent, policy: ResultPolicy, why: str
) -> None:
    shown = out(block, policy=policy)
    assert shown.images == ()
    assert shown.text.startswith("[image: tool image, ") and shown.text.endswith(why)


def test_a_png_a_server_declares_a_jpeg_reaches_the_model_as_a_png() -> None:
    [attachment] = out(image(PNG, "image/jpeg")).images
    assert data_url(attachment) == "data:image/png;base64," + base64.b64encode(PNG).decode()


def test_images_over_max_images_are_named_not_shown() -> None:
    policy = ResultPolicy(vision=True, max_images=2, max_image_bytes=1_000_000)
    shown = out(image(), image(mime="image/bmp"), image(), image(), policy=policy)
    assert len(shown.images) == 2  # the refused bmp does not use up a place
    lines = shown.text.splitlines()
    assert [line.rsplit("(", 1)[1] for line in lines] == [
        "shown to you below)",
        "not shown: the model takes no image/bmp)",
        "shown to you below)",
        "not shown: over llm.max_images)",
    ]


def test_invalid_base64_is_a_line() -> None:
    bad = types.ImageContent(type="image", data="not base64!", mime_type="image/png")
    shown = out(bad)
    assert shown == ToolOutput("[image: image/png, not valid base64; not shown to you]")


@given(
    st.lists(
        st.tuples(
            st.binary(min_size=12, max_size=200),
            st.sampled_from(["image/png", "image/jpeg", "image/bmp", "application/pdf"]),
        ),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
    st.integers(1, 4),
    st.integers(1, 300),
)
def test_the_text_never_holds_image_data(
    images: list[tuple[bytes, str]], vision: bool, max_images: int, max_bytes: int
) -> None:
    policy = ResultPolicy(vision=vision, max_images=max_images, max_image_bytes=max_bytes)
    blocks = [image(data, mime) for data, mime in images]
    blob = types.BlobResourceContents(uri="file:///b", blob=blocks[0].data)
    audio = types.AudioContent(type="audio", data=blocks[0].data, mime_type="audio/wav")
    shown = to_output(
        "tool",
        result(*blocks, audio, types.EmbeddedResource(type="resource", resource=blob)),
        policy,
    )
    for block in blocks:
        assert block.data not in shown.text
    assert len(shown.text.splitlines()) == len(blocks) + 2  # one line for each block
    assert len(shown.images) <= (max_images if vision else 0)
    assert all(a.mime_type in {"image/png", "image/jpeg"} for a in shown.images)
    assert all(sniff_image_type(a.data) for a in shown.images)  # only real images are sent
    assert all(len(a.data) <= max_bytes for a in shown.images)


# -- links and resources --------------------------------------------------------------------


def test_a_resource_link_is_a_markdown_link() -> None:
    link = types.ResourceLink(
        type="resource_link", name="manual", title="The [big] manual", uri="https://x.test/m"
    )
    assert out(link).text == "[The (big) manual](https://x.test/m)"
    bare = types.ResourceLink(
        type="resource_link",
        name="readme",
        uri="file:///tmp/readme.txt",
        description="how to",
        mime_type="text/plain",
    )
    assert out(bare).text == "[readme](file:///tmp/readme.txt) (how to; text/plain)"


def test_an_embedded_text_resource_is_its_text() -> None:
    doc = types.TextResourceContents(uri="file:///notes.txt", text="line one\nline two")
    assert out(types.EmbeddedResource(type="resource", resource=doc)).text == (
        "file:///notes.txt:\nline one\nline two"
    )


def test_an_embedded_blob_is_named_not_sent() -> None:
    blob = types.BlobResourceContents(
        uri="file:///r.pdf",
        mime_type="application/pdf",
        blob=base64.b64encode(b"x" * 3000).decode(),
    )
    shown = out(types.EmbeddedResource(type="resource", resource=blob)).text
    assert shown == "[resource file:///r.pdf: application/pdf, 3 KB; not shown to you]"


# -- errors ---------------------------------------------------------------------------------


def test_an_error_is_said_once_without_the_sdk_prefix() -> None:
    failed = result(text("Error executing tool fail: bad input: x must be > 0"), is_error=True)
    assert to_output("fail", failed, SEEING) == ToolOutput(
        "Error: fail failed: bad input: x must be > 0"
    )


def test_an_error_without_a_message_still_reads_as_one() -> None:
    assert to_output("boom", result(is_error=True), SEEING).text == "Error: boom failed: failed"
    withheld = to_output("boom", result(text("Error executing tool boom"), is_error=True), SEEING)
    assert withheld.text == "Error: boom failed: Error executing tool boom"


def test_the_prefix_is_only_removed_from_errors() -> None:
    said = "Error executing tool x: that is what the log said"
    assert out(text(said)).text == said
