"""An MCP tool result, as the model gets it: text, images, links and compact JSON.

* text blocks are passed as text;
* images become image parts (:mod:`bot.plugins.output`) when ``llm.vision`` is on and the image
  is of a type and size the model takes (the type as declared and as its bytes say: a server's
  ``mimeType`` is only a claim); otherwise a line says what was there;
* resource links are shown as Markdown links, embedded text resources as their text, binary
  ones as a line naming them;
* ``structuredContent`` is passed as compact JSON (its text twin, which servers add for older
  clients, is dropped rather than sent twice);
* ``isError`` results are prefixed ``Error:`` so the model reads them as the failure they are.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from bot.platform.media import (
    IMAGE_MIME_TYPES,
    Attachment,
    AttachmentKind,
    human_size,
    reference,
    sniff_image_type,
)
from bot.plugins.output import ToolOutput

__all__ = ["ResultPolicy", "compact_json", "to_output"]


@dataclass(frozen=True, slots=True)
class ResultPolicy:
    """What the model can take: images at all (``llm.vision``), how many, how big."""

    vision: bool
    max_images: int
    max_image_bytes: int


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def to_output(tool: str, result: types.CallToolResult, policy: ResultPolicy) -> ToolOutput:
    structured = result.structured_content
    lines: list[str] = []
    images: list[Attachment] = []
    texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
    if structured is not None and any(_says(text, structured) for text in texts):
        structured = None  # a primitive wrapped as {"result": value}: its text says it all
    for block in result.content:
        if isinstance(block, types.TextContent):
            if structured is not None and _same_json(block.text, structured):
                continue  # the JSON twin servers add for older clients: sent once, compact
            lines.append(_unprefixed(block.text, result.is_error))
        elif isinstance(block, types.ImageContent):
            image, line = _image(block, policy, taken=len(images))
            if image is not None:
                images.append(image)
            lines.append(line)
        elif isinstance(block, types.ResourceLink):
            lines.append(_link(block))
        elif isinstance(block, types.EmbeddedResource):
            lines.append(_embedded(block.resource))
        elif isinstance(block, types.AudioContent):
            lines.append(f"[audio: {block.mime_type}, {_size(block.data)}; not shown to you]")
    if structured is not None:
        lines.append(compact_json(structured))
    text = "\n".join(line for line in lines if line) or ("failed" if result.is_error else "done")
    if result.is_error:
        text = f"Error: {tool} failed: {text}"
    return ToolOutput(text, tuple(images))


def _says(text: str, structured: Any) -> bool:
    """``structured`` is ``{"result": value}`` and ``text`` is that value, as text or JSON."""
    if not isinstance(structured, dict) or set(structured) != {"result"}:
        return False
    value = structured["result"]
    return text == value or (not isinstance(value, str) and _same_json(text, value))


_SDK_ERROR = re.compile(r"^Error executing tool [^:]+: ")


def _unprefixed(text: str, is_error: bool) -> str:
    """The SDK's "Error executing tool x: " before a tool's own message: we say it once."""
    return _SDK_ERROR.sub("", text, count=1) if is_error else text


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except (ValueError, TypeError):
        return False


def _image(
    block: types.ImageContent, policy: ResultPolicy, *, taken: int
) -> tuple[Attachment | None, str]:
    try:
        data = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return None, f"[image: {block.mime_type}, not valid base64; not shown to you]"
    image = Attachment(AttachmentKind.IMAGE, data, block.mime_type, name="tool image")
    if not policy.vision:
        return None, f"{reference(image)} (not shown: image input is off for this bot)"
    if block.mime_type not in IMAGE_MIME_TYPES:
        return None, f"{reference(image)} (not shown: the model takes no {block.mime_type})"
    if sniff_image_type(data) is None:
        return None, f"{reference(image)} (not shown: not a JPEG, PNG, GIF or WebP image)"
    if len(data) > policy.max_image_bytes:
        return None, f"{reference(image)} (not shown: over llm.max_image_bytes)"
    if taken >= policy.max_images:
        return None, f"{reference(image)} (not shown: over llm.max_images)"
    return image, f"{reference(image)} (shown to you below)"


def _link(link: types.ResourceLink) -> str:
    label = (link.title or link.name or link.uri).replace("]", ")").replace("[", "(")
    details = [d for d in (link.description, link.mime_type) if d]
    suffix = f" ({'; '.join(details)})" if details else ""
    return f"[{label}]({link.uri}){suffix}"


def _embedded(resource: types.TextResourceContents | types.BlobResourceContents) -> str:
    if isinstance(resource, types.TextResourceContents):
        return f"{resource.uri}:\n{resource.text}"
    kind = resource.mime_type or "binary"
    return f"[resource {resource.uri}: {kind}, {_size(resource.blob)}; not shown to you]"


def _size(b64: str) -> str:
    return human_size(len(b64) * 3 // 4)
