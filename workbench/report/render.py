"""A `doc.Page` as Markdown or as one self-contained HTML file (its style inline, its images
beside it): every text escaped for its format, every link and image path URL-quoted."""

from __future__ import annotations

import html as htmllib
import re
from urllib.parse import quote

from workbench.report.doc import (
    Block,
    Code,
    Heading,
    Image,
    Inline,
    Link,
    Notice,
    Page,
    Paragraph,
    Pre,
    Table,
)

NOTICE_LABELS = {"missing": "not run yet", "problem": "cannot read"}

# ---- Markdown -------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")


def md_text(text: str, line_start: bool = False) -> str:
    """Plain text that Markdown shows as written: its markup characters backslash-escaped,
    <, > and & as entities (no raw HTML gets through), one line; at the start of a line, a
    leading - + = does not start a list or a heading either."""
    text = re.sub(r"\s+", " ", text)
    text = htmllib.escape(text, quote=False)
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return "\\" + text if line_start and text[:1] in ("-", "+", "=") else text


def md_code(text: str, in_table: bool = False) -> str:
    """Inline code that survives any backticks inside it; entities are literal in code spans,
    so nothing else needs escaping but a | inside a table cell (GFM's \\| there)."""
    text = re.sub(r"\s+", " ", text)
    text = text.replace("|", "\\|") if in_table else text
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_inline(part: Inline, in_table: bool = False, line_start: bool = False) -> str:
    if isinstance(part, Code):
        return md_code(part.text, in_table)
    if isinstance(part, Link):
        return f"[{md_text(part.text)}]({quote(part.href)})"
    return md_text(part, line_start)


def _md_parts(parts: tuple[Inline, ...]) -> str:
    return "".join(_md_inline(p, line_start=i == 0) for i, p in enumerate(parts))


def _md_block(block: Block) -> str:
    if isinstance(block, Heading):
        return "#" * block.level + " " + md_text(block.text)
    if isinstance(block, Paragraph):
        return _md_parts(block.parts)
    if isinstance(block, Notice):
        return f"> **{NOTICE_LABELS.get(block.kind, block.kind)}:** {_md_parts(block.parts)}"
    if isinstance(block, Image):
        return f"![{md_text(block.alt)}]({quote(block.src)})"
    if isinstance(block, Pre):
        fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", block.text)), default=0) + 1)
        return f"{fence}text\n{block.text.rstrip()}\n{fence}"
    assert isinstance(block, Table)
    head = "| " + " | ".join(md_text(h) or " " for h in block.headers) + " |"
    rule = "|" + "|".join("---" for _ in block.headers) + "|"
    rows = ["| " + " | ".join(_md_inline(c, True) for c in row) + " |" for row in block.rows]
    return "\n".join([head, rule, *rows])


def markdown(page: Page) -> str:
    return "\n\n".join(_md_block(b) for b in [Heading(1, page.title), *page.blocks]) + "\n"


# ---- HTML -----------------------------------------------------------------------------------

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em;
       color: #1b1f24; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.85em; }
th, td { border: 1px solid #d0d7de; padding: 0.25em 0.6em; text-align: left;
         vertical-align: top; }
th { background: #f6f8fa; }
code, pre { font-family: ui-monospace, monospace; background: #f6f8fa; }
pre { padding: 0.8em; overflow-x: auto; }
img { max-width: 100%; border: 1px solid #d0d7de; }
.notice { border-left: 4px solid #d0d7de; padding: 0.3em 0.8em; color: #57606a; }
.notice.problem { border-color: #cf222e; color: #1b1f24; }
h2 { border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; margin-top: 1.6em; }
"""


def _esc(text: str) -> str:
    return htmllib.escape(text, quote=True)


def _html_inline(part: Inline) -> str:
    if isinstance(part, Code):
        return f"<code>{_esc(part.text)}</code>"
    if isinstance(part, Link):
        return f'<a href="{_esc(quote(part.href))}">{_esc(part.text)}</a>'
    return _esc(part)


def _html_parts(parts: tuple[Inline, ...]) -> str:
    return "".join(_html_inline(p) for p in parts)


def _html_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{_esc(block.text)}</h{block.level}>"
    if isinstance(block, Paragraph):
        return f"<p>{_html_parts(block.parts)}</p>"
    if isinstance(block, Notice):
        label = _esc(NOTICE_LABELS.get(block.kind, block.kind))
        return (
            f'<p class="notice {_esc(block.kind)}"><strong>{label}:</strong> '
            f"{_html_parts(block.parts)}</p>"
        )
    if isinstance(block, Image):
        return f'<p><img src="{_esc(quote(block.src))}" alt="{_esc(block.alt)}"></p>'
    if isinstance(block, Pre):
        return f"<pre>{_esc(block.text.rstrip())}</pre>"
    assert isinstance(block, Table)
    head = "".join(f"<th>{_esc(h)}</th>" for h in block.headers)
    rows = "".join(
        "<tr>" + "".join(f"<td>{_html_inline(c)}</td>" for c in row) + "</tr>\n"
        for row in block.rows
    )
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}</tbody>\n</table>"


def html(page: Page) -> str:
    body = "\n".join(_html_block(b) for b in [Heading(1, page.title), *page.blocks])
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{_esc(page.title)}</title>\n<style>{STYLE}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )
