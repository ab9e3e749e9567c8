"""A markdown file's links, each resolved in the repository (the package's docstring says which, and how):
``links`` finds them outside code, ``anchors`` names a file's anchors as GitHub makes them, ``check_link`` checks
one."""

from __future__ import annotations

import bisect
import difflib
import html
import os
import re
import unicodedata
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from support import ROOT

from .markdown import fenced_blocks
from .paths import display, git_ignored, within


@dataclass
class Link:
    file: Path
    line: int
    dest: str
    kind: str  # "link", "image", "reference", "html", "undefined reference"

    @property
    def where(self) -> str:
        return f"{display(self.file)}:{self.line}"


@dataclass
class LinkResult:
    link: Link
    ok: bool | None  # None: skipped (external)
    reason: str


def _mask(text: str, spans) -> str:
    chars = list(text)
    for start, end in spans:
        for i in range(start, end):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


def _offsets(text: str) -> list[int]:
    starts, pos = [0], 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        starts.append(pos)
    return starts


def without_code(text: str, spans_too: bool = True) -> str:
    """``text`` with its fenced blocks, HTML comments and (``spans_too``) code spans blanked out, line numbers kept."""
    starts = _offsets(text)
    spans = [(starts[b.start - 1], starts[min(b.end, len(starts) - 1)]) for b in fenced_blocks(text)]
    text = _mask(text, spans)
    text = _mask(text, [m.span() for m in re.finditer(r"<!--.*?-->", text, re.DOTALL)])
    if spans_too:  # a code span: a run of backticks to the same run, within a paragraph
        text = _mask(text, [m.span() for m in re.finditer(r"(`+)(?:(?!\1)[^\n]|\n(?![ \t]*\n))+?\1(?!`)", text)])
    return text


LINK_TEXT = r"\[(?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*\]"
DEST = r"(<[^>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*)"
TITLE = r"""(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?"""
INLINE = re.compile(rf"(!?){LINK_TEXT}\(\s*{DEST}{TITLE}\s*\)")
REF_DEF = re.compile(r"^[ ]{0,3}\[((?:[^\[\]\\]|\\.)+)\]:[ \t]*(<[^>\n]*>|\S+)", re.MULTILINE)
REF_USE = re.compile(r"(!?)\[((?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*)\]\[((?:[^\[\]\\]|\\.)*)\]")
HTML_LINK = re.compile(r"<(a|img)\b[^>]*?\s(href|src)\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>]+)", re.IGNORECASE)


def _label(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip()).lower()


def links(md: Path, text: str | None = None) -> list[Link]:
    """Every link of a markdown text outside code: inline links and images, reference definitions, a
    ``[text][label]`` whose label has no definition, and HTML ``<a href>``/``<img src>``."""
    text = Path(md).read_text() if text is None else text
    masked = without_code(text)
    starts = _offsets(masked)

    def line(pos: int) -> int:
        return bisect.bisect_right(starts, pos)

    found = []
    for m in INLINE.finditer(masked):
        dest = m[2][1:-1] if m[2].startswith("<") else m[2]
        found.append(Link(md, line(m.start()), dest, "image" if m[1] else "link"))
        # a link's text may hold an image: [![badge](img)](url)
        for inner in INLINE.finditer(masked, m.start() + 1 + len(m[1]), m.end()):
            if inner[1]:
                found.append(Link(md, line(inner.start()), inner[2].strip("<>"), "image"))
    definitions = {}
    for m in REF_DEF.finditer(masked):
        definitions.setdefault(_label(m[1]), m)
        found.append(Link(md, line(m.start()), m[2].strip("<>"), "reference"))
    without_inline = _mask(masked, [m.span() for m in INLINE.finditer(masked)])
    for m in REF_USE.finditer(without_inline):
        label = m[3] if m[3].strip() else m[2]  # [text][label], or the collapsed [label][]
        if _label(label) not in definitions:
            found.append(Link(md, line(m.start()), m[0], "undefined reference"))
    for m in HTML_LINK.finditer(masked):
        found.append(Link(md, line(m.start()), m[3].strip("\"'"), "html"))
    return sorted(found, key=lambda link: link.line)


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (github-slugger): lowercased; every character but a letter, a mark, a
    digit, a connector (``_``), a hyphen or a space removed; each space a hyphen."""
    kept = (
        ch
        for ch in heading.strip().lower()
        if unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc" or ch in " -"
    )
    return "".join(kept).replace(" ", "-")


def heading_text(raw: str) -> str:
    """A heading's text as GitHub renders it (what its slug is made from): code spans, links, images, emphasis and
    HTML tags reduced to their text."""

    def protect(m: re.Match) -> str:
        return "\x00" + m[2].strip().replace("_", "\x01").replace("*", "\x02") + "\x00"

    text = re.sub(r"(`+)(.+?)\1", protect, raw)  # a code span: its underscores and stars are text
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)|\[([^\]]*)\]\[[^\]]*\]", lambda m: m[1] or m[2] or "", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"(?<![\w\\])(_{1,3})(?=\S)(.+?)(?<=\S)\1(?!\w)", r"\2", text)  # _emphasis_, __strong__
    text = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)  # backslash escapes
    return html.unescape(text.replace("\x00", "").replace("\x01", "_").replace("\x02", "*"))


def anchors(md: Path, text: str | None = None) -> list[str]:
    """The anchors of a markdown file: each heading's GitHub slug (a repeated one with -1, -2, ...), and the ids and
    names of its HTML elements (``<a id=...>``, ``<a name=...>``)."""
    text = Path(md).read_text() if text is None else text
    masked = without_code(text, spans_too=False)
    headings, lines = [], masked.splitlines()
    for i, line in enumerate(lines):
        atx = re.match(r"^[ ]{0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$", line)
        if atx:
            headings.append(atx[1] or "")
        elif (
            i > 0
            and re.match(r"^[ ]{0,3}(=+|-+)[ \t]*$", line)
            and lines[i - 1].strip()
            and not re.match(r"^[ ]{0,3}([-*+>|#]|\d+[.)])", lines[i - 1])
        ):
            headings.append(lines[i - 1].strip())
    found, seen = [], {}
    for heading in headings:
        slug = base = github_slug(heading_text(heading))
        while slug in seen:  # github-slugger: the first repeat is -1, the next -2
            seen[base] += 1
            slug = f"{base}-{seen[base]}"
        seen[slug] = 0
        found.append(slug)
    ids = re.finditer(r"<[a-zA-Z][^>]*?\s(id|name)\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>]+)", masked)
    found += [m[2].strip("\"'") for m in ids]
    return found


def check_link(link: Link, root: Path = ROOT, texts: dict | None = None) -> LinkResult:
    """One link: skipped when external, else its file must exist in the repository (not git-ignored) and its anchor
    be one of the target's."""
    dest = link.dest.strip()
    if link.kind == "undefined reference":
        return LinkResult(link, False, f"{dest}: no definition of its label")
    if re.match(r"(?i)(https?:|mailto:|//)", dest):
        return LinkResult(link, None, "external: not fetched")
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", dest):
        return LinkResult(link, False, f"{dest}: neither relative nor http(s)/mailto")
    if not dest:
        return LinkResult(link, False, "an empty link")
    path, _, anchor = dest.partition("#")
    path, anchor = urllib.parse.unquote(path.split("?")[0]), urllib.parse.unquote(anchor)
    source = Path(link.file)
    target = source if not path else (root / path.lstrip("/")) if path.startswith("/") else source.parent / path
    target = Path(os.path.normpath(target))
    if not within(target, root):
        return LinkResult(link, False, f"{dest}: {target} is outside the repository")
    if not target.exists():
        return LinkResult(link, False, f"{dest}: no file or directory {display(target)}")
    if target != source and git_ignored(target, root):
        return LinkResult(link, False, f"{dest}: git ignores {display(target)}, so a clone has no such file")
    if not anchor:
        return LinkResult(link, True, "exists")
    if target.is_dir():
        return LinkResult(link, False, f"{dest}: an anchor on a directory")
    if target.suffix.lower() in (".md", ".markdown"):
        texts = {} if texts is None else texts
        text = texts.get(target) if target in texts else target.read_text()
        names = anchors(target, text)
        if anchor in names:
            return LinkResult(link, True, "exists, with its anchor")
        close = difflib.get_close_matches(anchor, names, n=3)
        return LinkResult(
            link,
            False,
            f"{dest}: no heading or id {anchor!r} in {display(target)}"
            + (f" (near: {', '.join(close)})" if close else ""),
        )
    lines = re.fullmatch(r"L(\d+)(?:-L(\d+))?", anchor)
    if lines:
        count = len(target.read_text(errors="replace").splitlines())
        if max(int(n) for n in lines.groups() if n) <= count:
            return LinkResult(link, True, "exists, with its lines")
        return LinkResult(link, False, f"{dest}: {display(target)} has {count} lines")
    return LinkResult(link, False, f"{dest}: an anchor {anchor!r} into a file that is not markdown")


def check_links(md: Path, root: Path = ROOT, text: str | None = None) -> list[LinkResult]:
    md = Path(md)
    text = md.read_text() if text is None else text
    return [check_link(link, root, {md: text}) for link in links(md, text)]
