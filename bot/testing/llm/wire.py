"""OpenAI wire formats for the fake server: error bodies, completions, stream chunks.

Kept apart from the server so the shapes can be checked against the SDK's own types
(``openai.types.chat.ChatCompletion`` / ``ChatCompletionChunk``) in one place.
"""

from __future__ import annotations

import json
import random
import re
import string
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

JSONDict = dict[str, Any]

_ALPHABET = string.ascii_letters + string.digits
_PIECE_RE = re.compile(r"\s*[\w']+|\s*[^\w\s]+|\s+")
_MAX_PIECE = 8
_ARGUMENT_FRAGMENT = 6
SYSTEM_FINGERPRINT = "fp_parlour_fake"


@dataclass(frozen=True, slots=True)
class ApiError:
    """One OpenAI-style error answer: status, the ``error`` object's fields, extra headers."""

    status: int
    message: str
    type: str = "invalid_request_error"
    param: str | None = None
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def body(self) -> JSONDict:
        """The JSON body exactly as OpenAI nests it."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


@dataclass(frozen=True, slots=True)
class Generation:
    """What the "model" produced for one choice, already cut to the token limit."""

    content: str | None
    tool_calls: list[JSONDict]
    finish_reason: str
    completion_tokens: int


def request_id() -> str:
    """A fresh ``x-request-id`` value shaped like OpenAI's."""
    return f"req_{uuid.uuid4().hex}"


def completion_id() -> str:
    """A fresh ``chatcmpl-…`` id (29 random characters, like OpenAI's)."""
    return "chatcmpl-" + "".join(random.choices(_ALPHABET, k=29))


def mask_key(key: str) -> str:
    """Mask an API key like OpenAI's 401 message: a few leading and trailing characters only."""
    head = min(6, len(key) // 4)
    tail = min(4, len(key) // 6)
    return key[:head] + "*" * (len(key) - head - tail) + key[len(key) - tail :]


def usage_body(
    prompt_tokens: int,
    completion_tokens: int,
    override: Mapping[str, int] | None = None,
    *,
    cached_tokens: int = 0,
) -> JSONDict:
    """The ``usage`` object; ``override`` replaces counted numbers (total follows unless given).

    ``cached_tokens`` is the prompt prefix a provider cache served (see ``prompt_cache``). Any
    other key of ``override`` is sent as a field of its own, the way other providers extend the
    object (DeepSeek's ``prompt_cache_hit_tokens``).
    """
    given = dict(override or {})
    prompt = int(given.pop("prompt_tokens", prompt_tokens))
    completion = int(given.pop("completion_tokens", completion_tokens))
    cached = int(given.pop("cached_tokens", cached_tokens))
    total = int(given.pop("total_tokens", prompt + completion))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
        **{key: int(value) for key, value in given.items()},
    }


def completion_body(
    *,
    id: str,
    created: int,
    model: str,
    choices: Sequence[Generation],
    usage: JSONDict | None,
) -> JSONDict:
    """A non-streamed ``chat.completion`` object (``usage`` None: a server that omits it)."""
    out: list[JSONDict] = []
    for index, gen in enumerate(choices):
        message: JSONDict = {
            "role": "assistant",
            "content": gen.content,
            "refusal": None,
            "annotations": [],
        }
        if gen.tool_calls:
            message["tool_calls"] = gen.tool_calls
        out.append(
            {
                "index": index,
                "message": message,
                "logprobs": None,
                "finish_reason": gen.finish_reason,
            }
        )
    return {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": out,
        "usage": usage,
        "service_tier": "default",
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }


def split_text(text: str) -> list[str]:
    """Cut text into small token-like pieces, as a model streams it."""
    pieces: list[str] = []
    for match in _PIECE_RE.finditer(text):
        piece = match.group()
        pieces.extend(piece[i : i + _MAX_PIECE] for i in range(0, len(piece), _MAX_PIECE))
    return pieces


def stream_chunks(
    *,
    id: str,
    created: int,
    model: str,
    choices: Sequence[Generation],
    usage: JSONDict | None,
) -> Iterator[JSONDict]:
    """``chat.completion.chunk`` objects in OpenAI's order; a usage chunk last if asked for.

    The first delta of a choice carries the role, content follows in small deltas, and each
    tool call opens with index/id/type/name and empty arguments before argument fragments.
    """
    include_usage = usage is not None

    def chunk(index: int, delta: JSONDict, finish_reason: str | None = None) -> JSONDict:
        body: JSONDict = {
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [
                {
                    "index": index,
                    "delta": delta,
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
        }
        if include_usage:
            body["usage"] = None
        return body

    for index, gen in enumerate(choices):
        first: JSONDict = {"role": "assistant", "content": "", "refusal": None}
        if gen.content is None:
            first["content"] = None
        yield chunk(index, first)
        for piece in split_text(gen.content or ""):
            yield chunk(index, {"content": piece})
        for call_index, call in enumerate(gen.tool_calls):
            function = call["function"]
            opening = {
                "index": call_index,
                "id": call["id"],
                "type": "function",
                "function": {"name": function["name"], "arguments": ""},
            }
            yield chunk(index, {"tool_calls": [opening]})
            arguments: str = function["arguments"]
            for start in range(0, len(arguments), _ARGUMENT_FRAGMENT):
                fragment = arguments[start : start + _ARGUMENT_FRAGMENT]
                delta = {"tool_calls": [{"index": call_index, "function": {"arguments": fragment}}]}
                yield chunk(index, delta)
        yield chunk(index, {}, gen.finish_reason)
    if usage is not None:
        yield {
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [],
            "usage": usage,
        }


def sse_event(payload: JSONDict | str) -> bytes:
    """One ``data:`` server-sent event (``[DONE]`` is passed as a plain string)."""
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


def model_object(model: str) -> JSONDict:
    """A ``/v1/models`` entry."""
    return {"id": model, "object": "model", "created": 1_686_935_002, "owned_by": "openai"}
