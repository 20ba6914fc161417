"""A small Markdown to reStructuredText converter for the generated reports.

The reproduction reports (``doc/reproduce/*.md``) and the benchmark tables are written as
Markdown by the code that produces them; the documentation build converts them so that
they become pages of the site without a Markdown parser.  It handles what those reports
use: ATX headings, paragraphs, bullet and numbered lists, pipe tables, fenced code,
images on their own line, inline code, bold, italics and links.  Everything else is
escaped and shown as text, so a report can never break the ``-W`` build by accident.
"""

from __future__ import annotations

import re

_HEADING_CHARS = "=-~^\"'`"
_INLINE = re.compile(
    r"(?P<code>`+)(?P<codetext>.+?)(?P=code)"
    r"|!\[(?P<imgalt>[^\]]*)\]\((?P<imgsrc>[^)\s]+)\)"
    r"|\[(?P<linktext>[^\]]+)\]\((?P<linkurl>[^)\s]+)\)"
    r"|\*\*(?P<bold>[^*\s](?:[^*]*[^*\s])?)\*\*"
    r"|(?<![\w*])\*(?P<em>[^*\s](?:[^*]*[^*\s])?)\*(?![\w*])"
    r"|(?<![\w])_(?P<em2>[^_\s](?:[^_]*[^_\s])?)_(?![\w])"
    r"|<(?P<autolink>https?://[^>\s]+)>"
)
_ESCAPE = re.compile(r"([\\*_`|<>\[\]])")


def _escape(text):
    return _ESCAPE.sub(r"\\\1", text)


def _code_literal(text):
    text = text.strip()
    if not text:
        return ""
    if "``" in text or text.startswith("`") or text.endswith("`"):
        return _escape(text)
    return f"``{text}``"


def inline(text, link_doc=None):
    """Convert the inline Markdown of one line of text."""
    out = []
    pos = 0
    for m in _INLINE.finditer(text):
        out.append(_escape(text[pos:m.start()]))
        pos = m.end()
        if m.group("code"):
            piece = _code_literal(m.group("codetext"))
        elif m.group("imgsrc"):
            piece = _escape(m.group("imgalt") or m.group("imgsrc"))
        elif m.group("linkurl"):
            url = m.group("linkurl")
            label = re.sub(r"[`*]", "", m.group("linktext")).replace("<", "").replace(">", "")
            label = _escape(label).strip() or _escape(url)
            if link_doc is not None and not re.match(r"[a-z]+:", url) and url.endswith(".md"):
                piece = f":doc:`{label} <{link_doc(url)}>`"
            elif re.match(r"https?://", url):
                piece = f"`{label} <{url}>`__"
            else:
                piece = label
        elif m.group("bold") is not None:
            piece = f"**{_escape(m.group('bold'))}**"
        elif m.group("em") is not None or m.group("em2") is not None:
            piece = f"*{_escape(m.group('em') or m.group('em2'))}*"
        else:
            piece = f"`{m.group('autolink')} <{m.group('autolink')}>`__"
        out.append(piece and f"\\ {piece}\\ ")
    out.append(_escape(text[pos:]))
    return "".join(out)


def _split_row(line):
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    cells = re.split(r"(?<!\\)\|", line)
    return [c.strip().replace("\\|", "|") for c in cells]


def _is_separator(line):
    return bool(re.fullmatch(r"\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*", line))


def _table(rows, link_doc):
    header, body = rows[0], rows[1:]
    width = max(len(r) for r in rows)
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header] + body:
        row = row + [""] * (width - len(row))
        for j, cell in enumerate(row):
            text = inline(cell, link_doc) or "\\ "
            out.append(("   * - " if j == 0 else "     - ") + text)
    out.append("")
    return out


_LIST_ITEM = re.compile(r"^(?P<indent>\s*)(?P<marker>[-*+]|\d+[.)])\s+(?P<text>.*)$")


def markdown_to_rst(text, *, image_prefix="", link_doc=None, title=None):
    """Convert a Markdown document to reStructuredText.

    Parameters
    ----------
    text : str
        The Markdown source.
    image_prefix : str
        Prefix for relative image paths (images are resolved from the source directory).
    link_doc : callable or None
        Maps a relative ``*.md`` link to a document name for ``:doc:``; None leaves such
        links as plain text.
    title : str or None
        A title used when the document has no heading of its own.
    """
    lines = text.splitlines()
    out = []
    i = 0
    in_list = False
    list_indent = 0
    seen_heading = False
    if title is not None and not any(re.match(r"#{1,6}\s", ln) for ln in lines):
        out += [_escape(title), "=" * (len(title) + 2), ""]
        seen_heading = True

    def blank():
        if out and out[-1] != "":
            out.append("")

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        fence = re.match(r"^\s*(```+|~~~+)", line)
        if fence:
            blank()
            out += [".. code-block:: text", ""]
            i += 1
            body = []
            while i < len(lines) and not lines[i].strip().startswith(fence.group(1)):
                body.append(lines[i])
                i += 1
            i += 1
            out += ["   " + b if b.strip() else "" for b in body] or ["   (empty)"]
            out.append("")
            in_list = False
            continue
        heading = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if heading:
            blank()
            level = len(heading.group(1))
            title_text = inline(heading.group(2), link_doc).strip() or "\\ "
            char = _HEADING_CHARS[min(level, len(_HEADING_CHARS)) - 1]
            out += [title_text, char * (len(title_text) + 4), ""]
            seen_heading = True
            in_list = False
            i += 1
            continue
        if "|" in stripped and i + 1 < len(lines) and _is_separator(lines[i + 1]):
            rows = [_split_row(line)]
            i += 2
            while i < len(lines) and lines[i].strip() and "|" in lines[i]:
                rows.append(_split_row(lines[i]))
                i += 1
            blank()
            out += _table(rows, link_doc)
            in_list = False
            continue
        image = re.fullmatch(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)\)", stripped)
        if image:
            blank()
            src = image.group("src")
            if not re.match(r"[a-z]+:", src) and not src.startswith("/"):
                src = image_prefix + src
            out += [f".. image:: {src}", f"   :alt: {image.group('alt') or 'figure'}", ""]
            in_list = False
            i += 1
            continue
        if not stripped:
            blank()
            i += 1
            continue
        if re.fullmatch(r"(-{3,}|\*{3,}|_{3,})", stripped):
            blank()
            i += 1
            continue
        item = _LIST_ITEM.match(line)
        if item:
            if not in_list:
                blank()
            marker = "-" if item.group("marker") in "-*+" else "#."
            depth = len(item.group("indent").expandtabs()) // 2
            prefix = "  " * depth
            if in_list and depth == 0 and out and out[-1] != "" and out[-1].startswith(" "):
                pass
            if in_list and out and out[-1] != "" and depth != list_indent:
                out.append("")
            out.append(f"{prefix}{marker} {inline(item.group('text'), link_doc)}")
            in_list = True
            list_indent = depth
            i += 1
            continue
        if in_list and line[:1].isspace():
            prefix = "  " * list_indent + "   " if out[-1].lstrip().startswith("#.") else "  " * list_indent + "  "
            out.append(prefix + inline(stripped, link_doc))
            i += 1
            continue
        if in_list:
            blank()
            in_list = False
        if not seen_heading and title is not None:
            seen_heading = True
        out.append(inline(stripped, link_doc))
        i += 1
    return "\n".join(out).rstrip() + "\n"
