"""``bot.platform.media.sniff_image_type``: an image's type read from its bytes, never the
declared one.

Properties: it never raises; it names exactly the formats the model takes (the fake LLM, which
checks image parts as OpenAI does, is the independent judge); a signature decides whatever
follows it; the ``data:`` URL carries the sniffed type and is accepted on the wire.
"""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.platform.media import (
    IMAGE_MIME_TYPES,
    Attachment,
    AttachmentKind,
    MediaCaps,
    MediaRefusedError,
    check_caps,
    data_url,
    sniff_image_type,
)
from bot.testing.llm.images import check_image_url, image_format

SIGNATURES = {
    b"\xff\xd8\xff": "image/jpeg",
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}
CAPS = MediaCaps(max_image_bytes=10_000, max_images=4, max_audio_bytes=10_000)
# byte strings near a signature: prefixes of one, one byte off, RIFF without WEBP
near = st.one_of(
    st.binary(max_size=40),
    st.sampled_from([*SIGNATURES, b"RIFF\0\0\0\0WEBP"]).flatmap(
        lambda sig: st.tuples(st.integers(0, len(sig)), st.binary(max_size=20)).map(
            lambda cut: sig[: cut[0]] + cut[1]
        )
    ),
)


def image(data: bytes, declared: str = "image/jpeg") -> Attachment:
    return Attachment(AttachmentKind.IMAGE, data, declared, "file.jpg")


@given(near)
def test_the_sniffed_type_is_what_the_model_would_take(data: bytes) -> None:
    sniffed = sniff_image_type(data)
    assert sniffed is None or sniffed in IMAGE_MIME_TYPES
    judged = image_format(data)  # the fake LLM's reading, as OpenAI's
    assert sniffed == (None if judged is None else f"image/{judged}")


@given(st.sampled_from(sorted(SIGNATURES.items())), st.binary(max_size=64))
def test_a_signature_decides_whatever_follows(signature: tuple[bytes, str], tail: bytes) -> None:
    prefix, kind = signature
    assert sniff_image_type(prefix + tail) == kind


@given(st.binary(min_size=4, max_size=4), st.binary(max_size=64))
def test_riff_is_webp_only_with_its_form_type(size: bytes, tail: bytes) -> None:
    assert sniff_image_type(b"RIFF" + size + b"WEBP" + tail) == "image/webp"
    assert sniff_image_type(b"RIFF" + size + b"WAVE" + tail) is None


@given(near, st.sampled_from(sorted(IMAGE_MIME_TYPES)))
def test_an_image_is_sent_under_its_own_type_or_refused(data: bytes, declared: str) -> None:
    attachment = image(data, declared)
    sniffed = sniff_image_type(data)
    if sniffed is None:
        with pytest.raises(MediaRefusedError):
            check_caps([attachment], CAPS)
        with pytest.raises(ValueError):
            data_url(attachment)
        return
    check_caps([attachment], CAPS)
    url = data_url(attachment)
    assert url == f"data:{sniffed};base64,{base64.b64encode(data).decode()}"
    check_image_url(("image_url",), {"url": url})  # the fake LLM's check: no 400 on the wire
