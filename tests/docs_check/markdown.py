"""Markdown read as a shell would read its commands: the fenced code blocks, a shell block's command lines (a
``console`` block's ``$`` lines, comments dropped, continued lines joined), and a line's simple commands."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

SHELL_TAGS = {"bash", "sh", "shell", "console"}
OPERATORS = {"&&", "||", ";", "|", "&", "|&", ";;"}
REDIRECTIONS = {">", ">>", "<", "<<", "<<<", ">&", "&>", "&>>", ">|", "<>"}
PLACEHOLDER = re.compile(r"<([A-Za-z][\w.-]*)>")  # `<run>` in a path: not a redirection


@dataclass
class Block:
    tag: str  # the fence's info word, lowercased ("" when none)
    start: int  # line of the opening fence, 1-based
    end: int  # line of the closing fence (the last line when unclosed)
    lines: list[tuple[int, str]]  # (line, text) of the content, less the fence's indentation


FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def fenced_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a markdown text, indented ones (in a list item) included."""
    blocks, current, fence, indent = [], None, "", 0
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if current is None:
            m = FENCE.match(line)
            if m and not (m["fence"][0] == "`" and "`" in m["info"]):
                info = m["info"].strip()
                tag = info.split()[0].strip("{}.").lower() if info else ""
                current, fence, indent = Block(tag, number, number, []), m["fence"], len(m["indent"])
        else:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                current.end = number
                blocks.append(current)
                current = None
            else:
                prefix = len(line) - len(line.lstrip(" \t"))
                current.lines.append((number, line[min(indent, prefix) :]))
    if current is not None:  # unclosed: to the end of the text, as CommonMark reads it
        current.end = len(lines)
        blocks.append(current)
    return blocks


def strip_comment(line: str) -> str:
    """``line`` less a shell comment: a ``#`` outside quotes at the start of a word."""
    quote, escaped = None, False
    for i, ch in enumerate(line):
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def shell_lines(block: Block) -> list[tuple[int, str]]:
    """A shell block's command lines, as (line of its first physical line, text): of a ``console`` block only the
    ``$ `` lines; comments dropped, lines ending in a backslash joined with the next."""
    lines = block.lines
    if block.tag == "console":
        picked, continued = [], False
        for number, line in lines:
            if continued:
                picked.append((number, line))
            elif line.lstrip().startswith("$ "):
                picked.append((number, line.lstrip()[2:]))
            else:
                continue
            continued = strip_comment(picked[-1][1]).rstrip().endswith("\\")
        lines = picked
    joined, start, parts = [], None, []
    for number, line in lines:
        start = number if start is None else start
        line = strip_comment(line).rstrip()
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        parts.append(line)
        joined.append((start, " ".join(p.strip() for p in parts if p.strip())))
        start, parts = None, []
    if parts:
        joined.append((start, " ".join(p.strip() for p in parts if p.strip())))
    return [(number, text) for number, text in joined if text]


def simple_commands(line: str) -> list[list[str]]:
    """A command line split into its simple commands' words; redirections and their targets left out. A ``<word>``
    placeholder stays one word (``.snakemake/log/<run>.snakemake.log``)."""
    protected = PLACEHOLDER.sub(lambda m: f"__LT__{m[1]}__GT__", line)
    lexer = shlex.shlex(protected, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    commands, words, skip = [], [], False
    for token in lexer:
        token = token.replace("__LT__", "<").replace("__GT__", ">")
        if skip:
            skip = False
        elif token in OPERATORS:
            commands.append(words)
            words = []
        elif token in REDIRECTIONS:
            skip = True
        else:
            words.append(token)
    commands.append(words)
    return [c for c in commands if c]
