"""Docs that cannot rot (issue 48, item 4): every fenced shell command and every relative link of the project's
markdown (README.md and docs/**/*.md), each checked in a safe form. tests/test_docs.py runs it on the real documents
and on planted breaks; every function of the package takes a markdown file (and optionally its text), so a test can
plant one. This module gathers the documents (``markdown_files``) and reports on the results (``failures``,
``format_failures``, ``summary``); each part of the check is a module of its own, named below.

**Commands** (markdown.py reads them, commands.py extracts and classifies them, checks.py checks them). Code fences
tagged ``bash``, ``sh``, ``shell`` or ``console`` (of a ``console`` block, only the lines that start with ``$ ``).
Lines ending in ``\\`` are joined, comments dropped, and a line is split into its simple commands at ``&&``, ``||``,
``;``, ``|`` and ``&``; leading ``VAR=value`` assignments (and ``sudo``, ``env``, ``time``, ``nohup``) are set
aside. Each block starts at the repository root, as the README's commands do; ``cd`` and the install lines carry
into the block's later commands. Each command is checked by its kind (``classify``); the options of pip, pytest and
snakemake are read by one walker (args.py), and paths.py says which paths are the repository's and which git
ignores:

- ``snakemake`` (or ``python -m snakemake``): a dry run (``-n``), deduplicated (``DryRuns``, plans.py), with
  ``HF_TOKEN=hf_not_real``. It runs in a fresh directory standing in for the repository root, holding a copy of
  config.yaml, with ``-s <repo>/Snakefile -d <that directory>``; a ``-d``/``--directory`` of the command's own is
  rewritten into the temporary directory (``../study-seed3`` becomes ``<tmp>/study-seed3``, a fresh one), and a
  ``--configfile`` it names is copied there from the repository. ``--profile slurm`` keeps the repository's profile
  less its container setting (``support.local_profile``: Snakemake refuses to plan with Apptainer's deployment
  without Apptainer). A path the reader is to supply, ``path/to/...`` or an upper-case name (``PATH``), is made as
  an empty file so the plan can be made. ``--report`` is left out: a report collects a finished run's outputs, so
  its safe form is the plan of what it would collect. Two commands that differ only in ``-n`` or their cores plan
  once. All plans without a ``-d`` of their own share one directory, so the paper-scale launch preflight that a
  first plan passed is remembered by the next (``.snakemake/preflight-launches/``), as on a user's machine. (The
  run is ``support.plan``'s, but not through it: it fixes ``--config scale=paper`` and the profile, which a
  documented command sets, or not, itself.)
- ``python -m X ...`` and the console scripts of pyproject.toml (``fit-law``): run with the command's own arguments
  and ``--help`` appended (so a subcommand is checked too), exit 0 required. Only a module whose source uses
  argparse (or click/typer/Hydra) is run: ``--help`` given to one without would run its real work, so such a module
  fails the check instead, asking for a CLI or a classification. A module that does not exist fails.
- ``python path/to/script.py ...`` (the benchmarks): the script must exist and compile (``compile()``, no .pyc
  written into the checkout); one using argparse is also run with ``--help``, exit 0 required.
- Install lines, not run: ``python3 -m venv DIR``, ``. DIR/bin/activate``/``source``, ``pip install``,
  ``bash envs/install-*.sh``: each file they name must exist (``-r``/``-c`` files, recursively; ``-e .`` a project;
  a local wheel or directory; the install script; the activate script, unless an earlier venv line of the block
  makes it). ``git clone URL [DIR]`` is not run (no network): its directory is remembered, and ``cd`` into it puts
  the block back at the repository root; any other ``cd`` must name a directory of the repository (a missing one
  fails), and one out of it (``cd ..``) skips the block's later commands, with the reason.
- ``pytest`` (or ``python -m pytest``): not run (it would run this test again); each test path it names must exist,
  and a ``::test_name`` must be defined in it.
- Any other word must be in ``NOT_RUN`` (commands.py), with the reason it is not executed; its file path arguments
  must exist (or be git-ignored outputs of a run, such as ``results/`` or ``containers/images/``). A word in no
  class fails, so a new kind of command has to be classified in commands.py.

**Links** (links.py). Every ``[text](dest)``, ``![alt](dest)``, reference definition ``[label]: dest`` (and a
``[text][label]`` with no definition), ``<a href>`` and ``<img src>`` outside code: ``http(s)://`` and ``mailto:``
are skipped (no network here); a relative one must name an existing file or directory of the repository, relative to
the markdown file (``/path`` from the repository root), that git does not ignore; an anchor must be a heading's
GitHub slug in the target markdown file (``github_slug``), an ``<a id>``/``<a name>`` there, or ``#Ln[-Lm]`` within
another file.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from support import ROOT

from .checks import Result, check
from .commands import NOT_RUN, Command, classify, extract_commands
from .links import Link, LinkResult, anchors, check_link, check_links, github_slug, links
from .plans import DryRuns, plan_key

__all__ = [
    "NOT_RUN",
    "Command",
    "DryRuns",
    "Link",
    "LinkResult",
    "Result",
    "anchors",
    "check",
    "check_link",
    "check_links",
    "classify",
    "extract_commands",
    "failures",
    "format_failures",
    "github_slug",
    "links",
    "markdown_files",
    "plan_key",
    "summary",
]


def markdown_files(root: Path = ROOT) -> list[Path]:
    """README.md and every docs/**/*.md (docs/ may not exist yet)."""
    files = [root / "README.md"] if (root / "README.md").is_file() else []
    return files + (sorted((root / "docs").rglob("*.md")) if (root / "docs").is_dir() else [])


def failures(results) -> list:
    return [r for r in results if r.ok is False]


def format_failures(results) -> str:
    lines = []
    for r in failures(results):
        if isinstance(r, LinkResult):
            lines.append(f"{r.link.where}: [{r.link.kind}] {r.reason}")
        else:
            reason = r.reason.replace("\n", "\n      ")
            lines.append(f"{r.command.where}: $ {r.command.text}\n    [{r.kind}] {reason}")
    return f"{len(lines)} failed:\n" + "\n".join(lines)


def summary(results, dry_runs: DryRuns | None = None) -> str:
    """How many were checked, by kind: for the closing note."""
    if results and isinstance(results[0], LinkResult):
        kinds = Counter(r.link.kind for r in results)
        checked = sum(r.ok is not None for r in results)
        return (
            f"{len(results)} links in {len({r.link.file for r in results})} file(s): {checked} checked, "
            f"{len(results) - checked} external skipped, {len(failures(results))} failed; by kind: "
            + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
        )
    kinds = Counter(r.kind for r in results)
    skipped = sum(r.ok is None for r in results)
    files = len({r.command.file for r in results})
    text = (
        f"{len(results)} commands in {files} file(s), {len(failures(results))} failed, {skipped} skipped; by kind: "
        + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    )
    if dry_runs is not None and dry_runs.plans:
        total = sum(s for _, s, _ in dry_runs.plans)
        text += f"\n{len(dry_runs.plans)} distinct plans, {total:.0f} s:" + "".join(
            f"\n  {s:6.1f} s {'ok  ' if ok else 'FAIL'} {c}" for c, s, ok in dry_runs.plans
        )
    return text
