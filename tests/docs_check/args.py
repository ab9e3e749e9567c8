"""A command's arguments walked as its program reads them: each option with its values, each positional word.

Shared by the checks that read a command's options (pip's, pytest's, snakemake's) instead of each walking them by
hand. How many values an option takes is said per option, as argparse's ``nargs``: ``1`` (the next word, whatever
it is), ``OPTIONAL`` (the next word unless it is an option or empty), ``SEVERAL`` (the words up to the next option).
A long option may carry its one value glued with ``=`` (``--requirement=file``: then that is its only value, for
any ``nargs``); a short option named in ``glued`` may carry it glued on (``-rfile``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import NamedTuple

OPTIONAL, SEVERAL = "?", "*"


class Arg(NamedTuple):
    option: str | None  # the option (as listed in nargs, or as written when not listed); None for a positional word
    values: list[str]  # the option's values, or the positional word alone


def walk(args: Sequence[str], nargs: Mapping[str, int | str], glued: Collection[str] = ()) -> Iterator[Arg]:
    """Each of ``args`` as an ``Arg``. A word starting with ``-`` is an option; one not in ``nargs`` (or taking no
    value) comes as written, with no values. A one-value option at the end of ``args`` has the value ``""``."""
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if not word.startswith("-"):
            yield Arg(None, [word])
            continue
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        takes = nargs.get(name, 0)
        if not takes:
            if word[:2] in glued and len(word) > 2:  # -rfile
                yield Arg(word[:2], [word[2:]])
            else:
                yield Arg(word, [])
        elif eq:
            yield Arg(name, [value])
        elif takes == OPTIONAL:
            taken = int(i < len(args) and args[i] != "" and not args[i].startswith("-"))
            yield Arg(name, list(args[i : i + taken]))
            i += taken
        elif takes == SEVERAL:
            start = i
            while i < len(args) and not args[i].startswith("-"):
                i += 1
            yield Arg(name, list(args[start:i]))
        else:
            yield Arg(name, [args[i] if i < len(args) else ""])
            i += 1
