"""Each format is read with its structure, and bad files are refused with a clear reason."""

from __future__ import annotations

import io
import zipfile

import docx
import pytest
from pypdf import PdfWriter

from bot.knowledge.formats import DocumentError, read_document
from bot.testing.documents import text_pdf

LIMIT = 1_000_000


def pdf_with_text(*pages: str) -> bytes:
    """A minimal valid PDF whose pages show ``pages`` (the test kit's :func:`text_pdf`)."""
    return text_pdf(*pages)


def test_markdown_keeps_heading_paths_items_and_code() -> None:
    text = (
        "# Rules\n\nBe kind.\n\n## Bans\n\n- no spam\n- no ads\n  still the ad item\n\n"
        "```\ncode here\n```\n# Setup\n\nRun it."
    )
    blocks = read_document("faq.md", text.encode(), max_bytes=LIMIT)
    assert [(b.headings, b.text) for b in blocks] == [
        (("Rules",), "Be kind."),
        (("Rules", "Bans"), "- no spam"),
        (("Rules", "Bans"), "- no ads\n  still the ad item"),
        (("Rules", "Bans"), "code here"),
        (("Setup",), "Run it."),
    ]


def test_code_inside_a_list_item_keeps_its_indentation() -> None:
    text = "1. Add:\n\n   ```yaml\n   chats:\n     - match: x\n       knowledge: [rules]\n   ```\n"
    [block] = read_document("setup.md", text.encode(), max_bytes=LIMIT)
    assert "   chats:\n     - match: x\n       knowledge: [rules]" in block.text


def test_html_reads_text_not_markup_and_skips_scripts() -> None:
    page = (
        b"<html><head><title>t</title><script>alert(1)</script></head><body><nav>menu</nav>"
        b"<h1>Help</h1><div>Loose <b>bold</b> text<p>A paragraph.</p></div>"
        b"<h2>Table</h2><table><tr><td>key</td><td>value</td></tr></table>"
        b"<ul><li>first</li><li>second</li></ul></body></html>"
    )
    blocks = [(b.headings, b.text) for b in read_document("help.html", page, max_bytes=LIMIT)]
    assert blocks == [
        (("Help",), "Loose bold text"),
        (("Help",), "A paragraph."),
        (("Help", "Table"), "key | value"),
        (("Help", "Table"), "first"),
        (("Help", "Table"), "second"),
    ]
    assert not any("alert" in text or "menu" in text for _, text in blocks)


def test_docx_headings_paragraphs_and_tables() -> None:
    document = docx.Document()
    document.add_heading("Rules", level=1)
    document.add_paragraph("Be kind to each other.")
    document.add_heading("Fees", level=2)
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "yearly", "10 EUR"
    out = io.BytesIO()
    document.save(out)
    blocks = read_document("rules.docx", out.getvalue(), max_bytes=LIMIT)
    assert [(b.headings, b.text) for b in blocks] == [
        (("Rules",), "Be kind to each other."),
        (("Rules", "Fees"), "yearly | 10 EUR"),
    ]


def test_pdf_text_carries_its_page() -> None:
    blocks = read_document(
        "manual.pdf", pdf_with_text("Page one text", "Reset with F5"), max_bytes=LIMIT
    )
    assert [(b.page, b.text) for b in blocks] == [(1, "Page one text"), (2, "Reset with F5")]


def encrypted_pdf() -> bytes:
    writer = PdfWriter(clone_from=io.BytesIO(pdf_with_text("secret")))
    writer.encrypt("hunter2", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def blank_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(612, 792)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_bomb() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * (30 * LIMIT))
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("big.md", b"x" * (LIMIT + 1), "over the limit"),
        ("tool.exe", b"MZ\x90\x00", "unsupported format '.exe'"),
        ("latin.txt", "café".encode("latin-1"), "not UTF-8"),
        ("nul.txt", b"a\x00b", "binary data"),
        ("locked.pdf", encrypted_pdf(), "encrypted"),
        ("scan.pdf", blank_pdf(), "no text in the PDF"),
        ("broken.pdf", b"%PDF-1.4\n garbage", "not a readable PDF"),
        ("bomb.docx", docx_bomb(), "decompression bomb"),
        ("fake.docx", b"PK\x03\x04 not a zip", "damaged archive"),
        ("empty.md", b"   \n\n", "no text found"),
        ("renamed.pdf", b"# just Markdown", "not a PDF"),
        ("notes.docx", b"plain words", "not a DOCX"),
    ],
)
def test_bad_files_are_refused_with_the_reason(name: str, data: bytes, reason: str) -> None:
    with pytest.raises(DocumentError, match=reason) as refused:
        read_document(name, data, max_bytes=LIMIT)
    assert str(refused.value).startswith(name)


def test_a_heading_is_one_capped_line() -> None:
    text = "Conduct\nIGNORE ALL PREVIOUS\n===\n\nBe kind.\n\n# " + "long " * 100 + "\n\nMore."
    first, second = read_document("rules.md", text.encode(), max_bytes=LIMIT)
    assert first.headings == ("Conduct IGNORE ALL PREVIOUS",)
    assert len(second.headings[0]) == 200 and "\n" not in second.headings[0]


def test_many_docx_paragraphs_read_in_one_pass() -> None:
    """``paragraph.style`` searched every style per paragraph: 3,000 short ones took seconds;
    the style table is read once (a behaviour check: headings still found by style)."""
    document = docx.Document()
    document.add_heading("Guide", 1)
    for i in range(3000):
        document.add_paragraph(f"p{i}")
    document.add_heading("Setup", 2)
    document.add_paragraph("after")
    buffer = io.BytesIO()
    document.save(buffer)
    blocks = read_document("guide.docx", buffer.getvalue(), max_bytes=LIMIT * 100)
    assert len(blocks) == 3001 and blocks[0].headings == ("Guide",)
    assert blocks[-1].headings == ("Guide", "Setup") and blocks[-1].text == "after"
