"""Documents for tests of knowledge bases, made without a PDF library: :func:`text_pdf`.

A PDF with a text layer is a few objects and a cross-reference table of byte offsets; writing
them here keeps a test (or a bench) free of a PDF-writing dependency while pypdf reads the
result as it reads any PDF. Text is shown in Helvetica, one ``Tj`` a line, so keep it to plain
characters: parentheses and backslashes would need escaping in a PDF string.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["text_pdf"]


def text_pdf(*pages: str | Sequence[str]) -> bytes:
    """A valid PDF of ``pages``, each a text or its lines."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, page in enumerate(pages):
        lines = [page] if isinstance(page, str) else list(page)
        shown = " T* ".join(f"({line}) Tj" for line in lines)
        stream = f"BT /F1 9 Tf 11 TL 40 760 Td {shown} ET"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {5 + 2 * i} 0 R"
            " /Resources << /Font << /F1 3 0 R >> >> >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    trailer = f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return out + trailer.encode()
