"""Docs that cannot rot (issue 48, item 4): every fenced shell command and every relative link of the project's
markdown (README.md and docs/**/*.md), each checked in a safe form. tests/test_docs.py runs it on the real documents
and on planted breaks; every function here takes a markdown file (and optionally its text), so a test can plant one.

**Commands.** Code fences tagged ``bash``, ``sh``, ``shell`` or ``console`` (of a ``console`` block, only the lines
that start with ``$ ``). Lines ending in ``\\`` are joined, comments dropped, and a line is split into its simple
commands at ``&&``, ``||``, ``;``, ``|`` and ``&``; leading ``VAR=value`` assignments (and ``sudo``, ``env``, ``time``)
are set aside. Each block starts at the repository root, as the README's commands do; ``cd`` and the install lines
carry into the block's later commands. Each command is checked by its kind (``classify``):

- ``snakemake`` (or ``python -m snakemake``): a dry run (``-n``), deduplicated (``DryRuns``), with
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
- Any other word must be in ``NOT_RUN``, with the reason it is not executed; its file path arguments must exist (or
  be git-ignored outputs of a run, such as ``results/`` or ``containers/images/``). A word in no class fails, so a
  new kind of command has to be classified here.

**Links.** Every ``[text](dest)``, ``![alt](dest)``, reference definition ``[label]: dest`` (and a ``[text][label]``
with no definition), ``<a href>`` and ``<img src>`` outside code: ``http(s)://`` and ``mailto:`` are skipped (no
network here); a relative one must name an existing file or directory of the repository, relative to the markdown
file (``/path`` from the repository root), that git does not ignore; an anchor must be a heading's GitHub slug in
the target markdown file (``github_slug``), an ``<a id>``/``<a name>`` there, or ``#Ln[-Lm]`` within another file.
"""

from __future__ import annotations

import difflib
import functools
import html
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import unicodedata
import urllib.parse
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from support import ROOT, local_profile

SHELL_TAGS = {"bash", "sh", "shell", "console"}
FAKE_TOKEN = "hf_not_real"  # paper-scale plans refuse a gated model without a token (cluster.smk)
HELP_TIMEOUT_S = 300
PLAN_TIMEOUT_S = 1200

# Command words that are classified as not run. Each with the reason; their file path arguments must still exist.
NOT_RUN = {
    "apptainer": "builds or runs an image: needs Apptainer, root or user namespaces and the network for the base "
    "images, none of which this machine has (the image builds have their own tests: tests/paper/test_containers*, "
    "tests/paper/test_analysis_root.py)",
    "singularity": "Apptainer's former name: as apptainer",
    "sbatch": "submits to a SLURM cluster (the SLURM tests start one of their own: tests/workflow/test_slurm_*.py)",
    "srun": "runs on a SLURM allocation: needs a cluster",
    "squeue": "queries a SLURM cluster: needs one",
    "scancel": "cancels SLURM jobs: needs a cluster",
    "sacct": "queries SLURM accounting: needs a cluster",
    "sinfo": "queries a SLURM cluster: needs one",
    "apt-get": "installs system packages: needs root and the network, and changes the machine",
    "apt": "installs system packages: as apt-get",
    "nvidia-smi": "queries a GPU: none here",
    "export": "sets a variable of the reader's shell: nothing to run",
    "ls": "lists files, often a run's outputs that exist only after it",
    "cp": "copies a run's output (it exists only after the run) into the docs: the docs' picture",
    "cat": "prints a file, often a run's output that exists only after it",
    "less": "pages through a file: interactive",
    "head": "prints the start of a file, often a run's output",
    "tail": "prints the end of a file, often a run's output or log",
    "open": "opens a file in the desktop's viewer (macOS): interactive",
    "xdg-open": "opens a file in the desktop's viewer (Linux): interactive",
    "firefox": "a browser: interactive",
    "google-chrome": "a browser: interactive",
}
GIT_CLONE_VALUE_OPTIONS = {"-b", "--branch", "--depth", "-o", "--origin", "--filter", "-c", "--config", "--reference",
                           "-j", "--jobs", "--separate-git-dir", "-u", "--upload-pack", "--template"}  # fmt: skip
PREFIXES = {"sudo", "env", "time", "nohup"}  # words before the command proper
OPERATORS = {"&&", "||", ";", "|", "&", "|&", ";;"}
REDIRECTIONS = {">", ">>", "<", "<<", "<<<", ">&", "&>", "&>>", ">|", "<>"}
HAS_CLI = re.compile(r"\bargparse\b|\bArgumentParser\b|^\s*import click\b|@click\.|\btyper\b|@hydra\.main", re.M)
# A file the reader supplies, `path/to/log.jsonl` or an upper-case name (`PATH`, `OTHER/results/...`): made empty
# where a plan reads it, so that the plan can be made.
PLACEHOLDER_PATH = re.compile(r"(path/to/|[A-Z][A-Z0-9_]*(/|$))")
PLACEHOLDER = re.compile(r"<([A-Za-z][\w.-]*)>")  # `<run>` in a path: not a redirection
PIP_VALUE_OPTIONS = {
    "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-t", "--target", "--prefix", "--root",
    "--python-version", "--platform", "--implementation", "--abi", "--only-binary", "--no-binary", "--progress-bar",
    "-C", "--config-settings", "--trusted-host", "--src", "--upgrade-strategy", "--report", "--cache-dir", "--log",
    "--timeout", "--retries", "--proxy", "--cert", "--client-cert", "--python", "--exists-action", "--global-option",
    "--install-option", "--root-user-action", "--keyring-provider", "--group",
}  # fmt: skip
PYTEST_VALUE_OPTIONS = {
    "-k", "-m", "-n", "--numprocesses", "-p", "--durations", "--durations-min", "--dist", "-c", "--rootdir",
    "--maxfail", "-o", "--override-ini", "--junitxml", "--junit-xml", "--basetemp", "--tb", "-W",
    "--pythonwarnings", "--confcutdir", "--import-mode", "--log-level", "--capture", "--maxprocesses",
    "--max-worker-restart", "-r", "--cov", "--cov-report", "--timeout",
}  # fmt: skip
PYTEST_PATH_OPTIONS = {"--deselect", "--ignore", "--ignore-glob"}


# ---- markdown: fences, shell lines, simple commands ---------------------------------------------------------------


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


# ---- commands: extraction, with the block's state, and classification -----------------------------------------


@dataclass
class Command:
    file: Path
    line: int
    argv: list[str]
    env: dict[str, str]
    cwd: Path | None  # where it runs, in the repository; None after a cd out of it
    made: frozenset[Path]  # directories an earlier command of the block makes (a venv, a clone)
    root: Path = ROOT
    kind: str = ""
    verdict: tuple[bool | None, str] | None = None  # fixed at extraction (cd, the commands after a cd out)

    @property
    def text(self) -> str:
        assignments = [f"{k}={v}" for k, v in self.env.items()]
        return " ".join(shlex.quote(w) if w and not PLACEHOLDER.search(w) else w for w in assignments + self.argv)

    @property
    def where(self) -> str:
        return f"{display(self.file)}:{self.line}"


def display(path: Path) -> str:
    try:
        return str(Path(path).relative_to(ROOT))
    except ValueError:
        return str(path)


def split_prefix(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """Leading ``VAR=value`` words, and ``sudo``/``env``/``time``/``nohup``, set aside from the command proper."""
    env = {}
    while argv:
        word = argv[0]
        if re.fullmatch(r"[A-Za-z_]\w*=.*", word):
            key, _, value = word.partition("=")
            env[key] = value
        elif word not in PREFIXES:
            break
        argv = argv[1:]
    return env, argv


def is_python(word: str) -> bool:
    return bool(re.fullmatch(r"python(3(\.\d+)?)?", Path(word).name))


def python_target(argv: list[str]) -> tuple[str | None, str, list[str]]:
    """What a python command line runs: ("m", module, args), ("script", path, args), ("c", code, args) or
    (None, "", [])."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-m", "-c"):
            return a[1], argv[i + 1] if i + 1 < len(argv) else "", argv[i + 2 :]
        if re.fullmatch(r"-[mc].+", a):
            return a[1], a[2:], argv[i + 1 :]
        if a in ("-X", "-W", "--check-hash-based-pycs"):
            i += 2
        elif a.startswith("-") and a != "-":
            i += 1
        else:
            return "script", a, argv[i + 1 :]
    return None, "", []


@functools.lru_cache
def console_scripts(root: Path = ROOT) -> dict[str, str]:
    """pyproject.toml's ``[project.scripts]``: name -> "module:function"."""
    text = (root / "pyproject.toml").read_text() if (root / "pyproject.toml").exists() else ""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        section = re.search(r"^\[project\.scripts\]\n(.*?)(?=^\[|\Z)", text, re.M | re.S)
        pairs = re.findall(r'^\s*"?([\w.-]+)"?\s*=\s*"([^"]+)"', section[1] if section else "", re.M)
        return dict(pairs)
    return tomllib.loads(text).get("project", {}).get("scripts", {})


def classify(argv: list[str], root: Path = ROOT) -> str:
    word, base = argv[0], Path(argv[0]).name
    if base == "snakemake":
        return "snakemake"
    if is_python(word):
        how, target, _ = python_target(argv)
        if how == "m":
            return {"snakemake": "snakemake", "venv": "install", "virtualenv": "install", "pip": "install",
                    "ensurepip": "install", "pytest": "pytest"}.get(target, "python -m")  # fmt: skip
        return {"script": "python script", "c": "unknown"}.get(how, "unknown")
    if base in console_scripts(root):
        return "console script"
    if base in ("pip", "pip3") or word in (".", "source"):
        return "install"
    if base in ("bash", "sh") and len(argv) > 1 and re.fullmatch(r"(\./)?envs/install-[^/]+\.sh", argv[1]):
        return "install"
    if base in ("pytest", "py.test"):
        return "pytest"
    if base == "git" and argv[1:2] == ["clone"]:
        return "git clone"
    if word == "cd":
        return "cd"
    if base in NOT_RUN:
        return "not run"
    return "unknown"


def extract_commands(md: Path, root: Path = ROOT, text: str | None = None) -> list[Command]:
    """The simple commands of ``md``'s shell blocks, each with where it runs and what its block made before it."""
    md = Path(md)
    text = md.read_text() if text is None else text
    commands = []
    for block in fenced_blocks(text):
        if block.tag not in SHELL_TAGS:
            continue
        cwd, made, clones, gone = root, set(), set(), None  # per block, from the repository root
        for number, line in shell_lines(block):
            for words in simple_commands(line):
                env, argv = split_prefix(words)
                if not argv:
                    continue
                cmd = Command(md, number, argv, env, cwd, frozenset(made), root)
                cmd.kind = classify(argv, root)
                if gone:
                    cmd.verdict = (None, gone)
                elif cmd.kind == "cd":
                    target = argv[1] if len(argv) > 1 else "~"
                    if target in clones:
                        cwd, cmd.verdict = root, (True, f"into the clone {target}: the repository root")
                    else:
                        new = Path(os.path.normpath(cwd / os.path.expanduser(target)))
                        if not _within(new, root):
                            gone = f"after `{cmd.text}` (line {number}) leaves the repository: its layout cannot say"
                            cwd, cmd.verdict = None, (None, f"{new} is outside the repository: not checked")
                        elif new.is_dir():
                            cwd, cmd.verdict = new, (True, f"{display(new)} is a directory of the repository")
                        else:
                            cmd.verdict = (False, f"no directory {display(new)} in the repository")
                elif cmd.kind == "git clone":
                    rest = [a for i, a in enumerate(argv[2:], 2) if not a.startswith("-")
                            and argv[i - 1] not in GIT_CLONE_VALUE_OPTIONS]  # fmt: skip
                    if rest:
                        name = rest[1] if len(rest) > 1 else re.sub(r"\.git$", "", rest[0].rstrip("/").split("/")[-1])
                        clones.add(name)
                        made.add(Path(os.path.normpath(cwd / name)))
                    cmd.verdict = (True, "not run (the network): its directory is this repository's")
                elif cmd.kind == "install" and is_python(argv[0]) and python_target(argv)[1] in ("venv", "virtualenv"):
                    for a in python_target(argv)[2]:
                        if not a.startswith("-"):
                            made.add(Path(os.path.normpath(cwd / a)))
                commands.append(cmd)
    return commands


def _within(path: Path, root: Path) -> bool:
    return os.path.normpath(path) == os.path.normpath(root) or os.path.normpath(path).startswith(
        os.path.normpath(root) + os.sep
    )


# ---- checks ------------------------------------------------------------------------------------------------------


@dataclass
class Result:
    command: Command
    kind: str  # what was done: "snakemake dry run", "python -m --help", ...
    ok: bool | None  # None: skipped, with the reason
    reason: str
    seconds: float = 0.0


def check(cmd: Command, dry_runs: DryRuns | None = None) -> Result:
    """One command checked in its safe form (the module docstring says how, by kind)."""
    started = time.perf_counter()
    if cmd.verdict is not None:
        result = Result(cmd, cmd.kind, *cmd.verdict)
    elif cmd.kind == "snakemake":
        if dry_runs is None:
            raise ValueError("a snakemake command needs a DryRuns")
        result = dry_runs.check(cmd)
    else:
        result = CHECKS.get(cmd.kind, _check_unknown)(cmd)
    result.seconds = result.seconds or time.perf_counter() - started
    return result


def _check_unknown(cmd: Command) -> Result:
    how, _, _ = python_target(cmd.argv) if is_python(cmd.argv[0]) else (None, "", [])
    if is_python(cmd.argv[0]):
        what = "`python -c`" if how == "c" else "a python command with neither -m nor a script"
        return Result(cmd, "unclassified", False,
                      f"{what} is not a checked kind: classify it in tests/docs_commands.py")  # fmt: skip
    if Path(cmd.argv[0]).name in ("bash", "sh"):
        return Result(cmd, "unclassified", False,
                      f"of the scripts run by {cmd.argv[0]}, only envs/install-*.sh is classified (an install, not "
                      "run): classify this one in tests/docs_commands.py")  # fmt: skip
    return Result(cmd, "unclassified", False,
                  f"command word {cmd.argv[0]!r} is not classified: add it to NOT_RUN in tests/docs_commands.py with "
                  f"the reason it is not run, or make it a checked kind")  # fmt: skip


def _run_help(cmd: Command, argv: list[str], kind: str) -> Result:
    started = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=cmd.cwd, timeout=HELP_TIMEOUT_S,
                              env={**os.environ, **cmd.env})  # fmt: skip
    except subprocess.TimeoutExpired:
        return Result(cmd, kind, False, f"`{' '.join(argv[1:])}` ran past {HELP_TIMEOUT_S} s")
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        why = _tail(proc.stderr or proc.stdout)
        return Result(cmd, kind, False, f"--help exited {proc.returncode}: {why}", seconds)
    return Result(cmd, kind, True, "--help exits 0", seconds)


def _module_source(module: str) -> tuple[str | None, str]:
    """The source `python -m module` runs, or None and why not."""
    try:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(module + ".__main__")
    except (ImportError, ValueError) as e:
        return None, f"No module named {module!r} ({type(e).__name__}: {e})"
    if spec is None:
        return None, f"No module named {module!r}"
    if not spec.origin or not Path(spec.origin).is_file():
        return None, f"module {module!r} has no source file to run"
    return Path(spec.origin).read_text(errors="replace"), spec.origin


def _check_module(cmd: Command, module: str, args: list[str], run_argv: list[str], kind: str) -> Result:
    source, origin = _module_source(module)
    if source is None:
        return Result(cmd, kind, False, origin)
    if not HAS_CLI.search(source):
        return Result(cmd, kind, False,
                      f"{display(Path(origin))} has no argparse --help, and --help given to it would run its real "
                      "work: give it a CLI, or classify it in tests/docs_commands.py")  # fmt: skip
    return _run_help(cmd, run_argv, kind)


def _check_python(cmd: Command) -> Result:
    how, target, args = python_target(cmd.argv)
    if how == "m":
        return _check_module(cmd, target, args, [sys.executable, "-m", target, *args, "--help"], "python -m --help")
    script = Path(os.path.normpath(cmd.cwd / target))
    if not script.is_file():
        return Result(cmd, "python script", False, f"no script {display(script)}")
    source = script.read_text(errors="replace")
    try:
        compile(source, str(script), "exec")
    except SyntaxError as e:
        return Result(cmd, "python script", False, f"{display(script)} does not compile: {e}")
    if not HAS_CLI.search(source):
        return Result(cmd, "python script (compiled)", True, f"{display(script)} compiles (it has no argparse --help)")
    result = _run_help(cmd, [sys.executable, str(script), *args, "--help"], "python script --help")
    if not Path(cmd.argv[0]).name.startswith("python") or "/" in cmd.argv[0]:
        result.reason += f" (with this interpreter, for {cmd.argv[0]})"
    return result


def _check_console_script(cmd: Command) -> Result:
    name = Path(cmd.argv[0]).name
    module, _, function = console_scripts(cmd.root)[name].partition(":")
    installed = Path(sys.executable).parent / name
    if installed.exists():
        run_argv = [str(installed), *cmd.argv[1:], "--help"]
    else:  # not installed in this environment: its entry point, as the installed script would call it
        code = f"import sys; from {module} import {function} as f; sys.argv[0] = {name!r}; sys.exit(f())"
        run_argv = [sys.executable, "-c", code, *cmd.argv[1:], "--help"]
    return _check_module(cmd, module, cmd.argv[1:], run_argv, "console script --help")


def _exists_or_output(path: Path, root: Path) -> str | None:
    """None when ``path`` exists (a glob or brace pattern: matches), or is an output a run makes (git ignores it);
    else why not."""
    for expanded in _braces(str(path)):
        if any(ch in expanded for ch in "*?["):
            if not list(Path("/").glob(expanded.lstrip("/"))) and not _git_ignored(Path(expanded), root):
                return f"nothing matches {display(Path(expanded))}"
        elif not Path(expanded).exists() and not _git_ignored(Path(expanded), root):
            return f"no file {display(Path(expanded))}"
    return None


def _braces(text: str) -> list[str]:
    m = re.search(r"\{([^{}]*,[^{}]*)\}", text)
    if not m:
        return [text]
    return [e for part in m[1].split(",") for e in _braces(text[: m.start()] + part + text[m.end() :])]


def _git_ignored(path: Path, root: Path) -> bool:
    if not _within(path, root):
        return False
    # A directory pattern (``results/``) matches a path that does not exist yet only when written as a directory, and
    # a path under it only through that directory: a fresh clone has no results/ to tell git that it is one.
    rel = Path(os.path.relpath(path, root))
    candidates = [str(rel), f"{rel}/", *(f"{parent}/" for parent in rel.parents if str(parent) != ".")]
    proc = subprocess.run(["git", "-C", str(root), "check-ignore", "--", *candidates], capture_output=True)  # 0: any is
    return proc.returncode == 0


def _path_like(arg: str) -> bool:
    if not arg or arg.startswith("-") or "://" in arg or "=" in arg or "$" in arg or PLACEHOLDER.search(arg):
        return False
    if PLACEHOLDER_PATH.match(arg):  # the reader's own file
        return False
    return "/" in arg or arg in (".", "..") or bool(re.search(r"\.[A-Za-z][A-Za-z0-9]{0,4}$", arg))


def _requirements(path: Path, seen: set[Path]) -> list[str]:
    """What a requirements or constraints file names that is missing, recursively (its -r and -c lines)."""
    if path in seen:
        return []
    seen.add(path)
    missing = []
    for line in path.read_text().splitlines():
        m = re.match(r"\s*(-r|--requirement|-c|--constraint)[\s=]+(\S+)", line)
        if m:
            nested = Path(os.path.normpath(path.parent / m[2]))
            if nested.is_file():
                missing += _requirements(nested, seen)
            else:
                missing.append(f"{display(nested)} (named in {display(path)})")
    return missing


def _check_install(cmd: Command) -> Result:
    argv, cwd = cmd.argv, cmd.cwd
    word = argv[0] if argv[0] in (".", "source") else Path(argv[0]).name
    problems, named = [], []

    def need(value: str, what: str = "file") -> None:
        path = Path(os.path.normpath(cwd / value))
        named.append(display(path))
        if any(_within(path, m) for m in cmd.made):
            return  # made by an earlier line of the block (the venv, the clone)
        if what == "project":
            if not ((path / "pyproject.toml").exists() or (path / "setup.py").exists()):
                problems.append(f"{display(path)} is no Python project (no pyproject.toml or setup.py)")
        elif not path.exists():
            problems.append(f"no {what} {display(path)}")
        elif what in ("requirements file", "constraints file"):
            problems.extend(f"no file {m}" for m in _requirements(path, set()))

    if word in (".", "source"):
        if len(argv) < 2:
            return Result(cmd, "install (files checked)", False, f"`{word}` names no file")
        need(argv[1], "file to source")
    elif word in ("bash", "sh"):
        need(argv[1], "install script")
    elif is_python(argv[0]) and python_target(argv)[1] in ("venv", "virtualenv", "ensurepip"):
        return Result(cmd, "install (not run)", True, "makes a virtual environment: not run")
    else:  # pip
        args = python_target(argv)[2] if is_python(argv[0]) else argv[1:]
        if not args or args[0] != "install":
            return Result(cmd, "install (not run)", True, f"pip {' '.join(args[:1])}: not run")
        i, args = 0, args[1:]
        while i < len(args):
            a = args[i]
            opt, eq, val = a.partition("=") if a.startswith("--") else (a, "", "")
            value = val if eq else (args[i + 1] if i + 1 < len(args) else "")
            step = 1 if eq else 2
            if opt in ("-r", "--requirement"):
                need(value, "requirements file")
            elif opt in ("-c", "--constraint"):
                need(value, "constraints file")
            elif opt in ("-e", "--editable"):
                if "://" not in value and not value.startswith("git+"):
                    need(value, "project")
            elif opt in PIP_VALUE_OPTIONS:
                pass
            elif re.fullmatch(r"-[rce].+", a):  # -rfile
                need(a[2:], {"r": "requirements file", "c": "constraints file", "e": "project"}[a[1]])
                step = 1
            else:
                step = 1
                if not a.startswith("-") and "://" not in a:
                    bare = a.split("[")[0]
                    if bare in (".", "..") or "/" in bare or re.search(r"\.(whl|tar\.gz|zip)$", bare):
                        need(bare, "project" if Path(os.path.normpath(cwd / bare)).is_dir() else "file")
            i += step
    if problems:
        return Result(cmd, "install (files checked)", False, "; ".join(problems))
    return Result(cmd, "install (files checked)", True, f"not run; exists: {', '.join(named) or 'nothing named'}")


def _check_pytest(cmd: Command) -> Result:
    args = python_target(cmd.argv)[2] if is_python(cmd.argv[0]) else cmd.argv[1:]
    problems, named, i = [], [], 0
    while i < len(args):
        a = args[i]
        opt, eq, val = a.partition("=") if a.startswith("--") else (a, "", "")
        if opt in PYTEST_PATH_OPTIONS:
            value = val if eq else (args[i + 1] if i + 1 < len(args) else "")
            i += 1 if eq else 2
            paths = [value]
        elif opt in PYTEST_VALUE_OPTIONS:
            i += 1 if eq else 2
            continue
        elif a.startswith("-"):
            i += 1
            continue
        else:
            i += 1
            paths = [a]
        for p in paths:
            file, _, node = p.partition("::")
            path = Path(os.path.normpath(cmd.cwd / file))
            named.append(display(path) + (f"::{node}" if node else ""))
            if not path.exists():
                problems.append(f"no test path {display(path)}")
            elif node:
                source = path.read_text() if path.is_file() else ""
                for name in node.split("::"):
                    name = name.split("[")[0]
                    if not re.search(rf"^\s*(async\s+)?(def|class)\s+{re.escape(name)}\b", source, re.M):
                        problems.append(f"{display(path)} defines no {name}")
    if problems:
        return Result(cmd, "pytest (paths checked)", False, "; ".join(problems))
    return Result(cmd, "pytest (paths checked)", True, f"not run (it would run this test again); exists: "
                  f"{', '.join(named) or 'the default test paths'}")  # fmt: skip


def _check_not_run(cmd: Command) -> Result:
    problems = []
    for arg in cmd.argv[1:]:
        if _path_like(arg):
            problem = _exists_or_output(Path(os.path.normpath(cmd.cwd / os.path.expanduser(arg))), cmd.root)
            problems += [problem] if problem else []
    reason = NOT_RUN[Path(cmd.argv[0]).name]
    if problems:
        return Result(cmd, "not run (allowlist)", False, f"{'; '.join(problems)} (not run: {reason})")
    return Result(cmd, "not run (allowlist)", True, f"not run: {reason}")


CHECKS = {
    "python -m": _check_python,
    "python script": _check_python,
    "console script": _check_console_script,
    "install": _check_install,
    "pytest": _check_pytest,
    "not run": _check_not_run,
}


def _tail(text: str, limit: int = 1500) -> str:
    """The part of a command's output that says why it failed: from its first error line, at most ``limit``
    characters."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    for i in reversed(range(len(lines))):  # the last error named: a traceback's own, or Snakemake's
        if re.search(r"Error\b|Exception\b|error:|No module named", lines[i]):
            lines = lines[i : i + 12]
            break
    text = "\n".join(lines[-12:])
    return text if len(text) <= limit else text[:limit] + " [...]"


def plan_key(argv: list[str]) -> list[str]:
    """What makes two dry runs the same plan: the command line less -n and the cores or jobs, which a dry run does not
    use (``snakemake -n`` and ``snakemake --cores all`` plan the same jobs)."""
    key, previous = [], ""
    for a in argv:
        count = previous in ("-c", "--cores", "-j", "--jobs") and re.fullmatch(r"\d+|all", a)
        if not (count or a in ("-n", "--dry-run", "--dryrun", "-c", "--cores", "-j", "--jobs")
                or re.fullmatch(r"-[cj]\d+|--(cores|jobs)=.*", a)):  # fmt: skip
            key.append(a)
        previous = a
    return key


class DryRuns:
    """The dry runs of snakemake commands, each distinct plan made once, in ``base``: ``base/root`` stands for the
    repository root (a copy of its config.yaml) and is the working directory of every plan without a -d of its
    own."""

    def __init__(self, base: Path, root: Path = ROOT):
        self.base, self.root = Path(base), root
        self.mirror = self.base / "root"
        self.mirror.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / "config.yaml", self.mirror / "config.yaml")
        self.done: dict[tuple, Result] = {}
        self.plans: list[tuple[str, float, bool]] = []  # (command line, seconds, ok), each distinct plan once

    def _dir(self, value: str, cwd: Path) -> Path:
        """A -d of the command's own, rewritten into the temporary directory."""
        path = Path(os.path.expanduser(value))
        mirrored = (self.mirror / cwd.relative_to(self.root) / path) if not path.is_absolute() else (
            self.base / "absolute" / path.relative_to(path.anchor))  # fmt: skip
        mirrored = Path(os.path.normpath(mirrored))
        if not _within(mirrored, self.base):
            mirrored = self.base / "outside" / mirrored.name
        mirrored.mkdir(parents=True, exist_ok=True)
        return mirrored

    def command(self, cmd: Command) -> tuple[list[str], Path, Path, list[str]]:
        """The dry run's command line, its working directory, its workflow directory, and any problem found before
        running it."""
        argv = cmd.argv
        args = python_target(argv)[2] if is_python(argv[0]) else argv[1:]
        run_cwd = self.mirror / cmd.cwd.relative_to(self.root)
        run_cwd.mkdir(parents=True, exist_ok=True)
        out, problems, workdir, snakefile, i = [], [], None, False, 0
        while i < len(args):
            a = args[i]
            opt, eq, val = a.partition("=") if a.startswith("--") else (a, "", "")
            value = val if eq else (args[i + 1] if i + 1 < len(args) else "")
            step = 1 if eq else 2
            if opt in ("-d", "--directory"):
                workdir = self._dir(value, cmd.cwd)
                out += ["-d", str(workdir)]
            elif opt in ("-s", "--snakefile"):
                path = Path(os.path.normpath(cmd.cwd / value))
                problems += [] if path.is_file() else [f"no Snakefile {display(path)}"]
                out += ["-s", str(path)]
                snakefile = True
            elif opt == "--profile":
                path = Path(os.path.normpath(cmd.cwd / value))
                if path == self.root / "slurm":  # the repository's, less Apptainer (support.local_profile)
                    out += ["--profile", str(local_profile(self.base))]
                elif path.is_dir():
                    out += ["--profile", str(path)]
                else:
                    problems.append(f"no profile directory {display(path)}")
                    out += ["--profile", value]
            elif opt in ("--report", "--report-stylesheet"):  # a report collects a finished run's outputs: left out
                bare = opt == "--report" and (not value or value.startswith("-"))  # its path is optional
                step = 1 if eq or bare else 2
            elif opt in ("--configfile", "--configfiles"):
                values = [val] if eq else []
                j = i + 1
                while not eq and j < len(args) and not args[j].startswith("-"):
                    values.append(args[j])
                    j += 1
                for v in values:  # relative to where the command runs: copied into its stand-in
                    source = Path(os.path.normpath(cmd.cwd / v))
                    if not Path(v).is_absolute() and source.is_file():
                        (run_cwd / v).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy(source, run_cwd / v)
                out += [opt, *values]
                step = 1 if eq else j - i
            else:
                out.append(a)
                step = 1
            i += step
        workdir = workdir or run_cwd
        for a in out:  # a path the reader supplies: made empty, where the plan reads it from
            path = a.partition("=")[2] if "=" in a and not a.startswith("-") else a
            if PLACEHOLDER_PATH.match(path):
                for where in {workdir, run_cwd}:
                    (where / path).parent.mkdir(parents=True, exist_ok=True)
                    (where / path).touch()
        full = [sys.executable, "-m", "snakemake", "-n", *([] if snakefile else ["-s", str(self.root / "Snakefile")]),
                *([] if "-d" in out else ["-d", str(workdir)]), *out]  # fmt: skip
        return full, run_cwd, workdir, problems

    def check(self, cmd: Command) -> Result:
        """The command's dry run, or the result of the same plan made before."""
        argv, run_cwd, _, problems = self.command(cmd)
        if problems:
            return Result(cmd, "snakemake dry run", False, "; ".join(problems))
        key = (tuple(plan_key(argv)), str(run_cwd), tuple(sorted(cmd.env.items())))
        if key in self.done:
            first = self.done[key]
            reason = f"{first.reason} (the plan of {first.command.where})"
            return Result(cmd, "snakemake dry run", first.ok, reason, 0.0)
        env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
        env.update(cmd.env, HF_TOKEN=FAKE_TOKEN)
        started = time.perf_counter()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=run_cwd, timeout=PLAN_TIMEOUT_S)
            seconds = time.perf_counter() - started
            if proc.returncode == 0:
                jobs = re.search(r"^total\s+(\d+)\s*$", proc.stdout + proc.stderr, re.M)
                nothing = "Nothing to be done" in proc.stdout + proc.stderr
                what = f"{jobs[1]} jobs" if jobs else "nothing to do" if nothing else "planned"
                result = Result(cmd, "snakemake dry run", True, f"dry run: {what}, {seconds:.0f} s", seconds)
            else:
                why = _tail(proc.stderr + "\n" + proc.stdout)
                result = Result(cmd, "snakemake dry run", False, f"dry run exited {proc.returncode}: {why}", seconds)
        except subprocess.TimeoutExpired:
            seconds = time.perf_counter() - started
            result = Result(cmd, "snakemake dry run", False, f"dry run ran past {PLAN_TIMEOUT_S} s", seconds)
        self.done[key] = result
        self.plans.append((cmd.text, seconds, bool(result.ok)))
        return result


# ---- links -------------------------------------------------------------------------------------------------------


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
    text = _mask(text, [m.span() for m in re.finditer(r"<!--.*?-->", text, re.S)])
    if spans_too:  # a code span: a run of backticks to the same run, within a paragraph
        text = _mask(text, [m.span() for m in re.finditer(r"(`+)(?:(?!\1)[^\n]|\n(?![ \t]*\n))+?\1(?!`)", text)])
    return text


LINK_TEXT = r"\[(?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*\]"
DEST = r"(<[^>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*)"
TITLE = r"""(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?"""
INLINE = re.compile(rf"(!?){LINK_TEXT}\(\s*{DEST}{TITLE}\s*\)")
REF_DEF = re.compile(rf"^[ ]{{0,3}}\[((?:[^\[\]\\]|\\.)+)\]:[ \t]*(<[^>\n]*>|\S+)", re.M)
REF_USE = re.compile(r"(!?)\[((?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*)\]\[((?:[^\[\]\\]|\\.)*)\]")
HTML_LINK = re.compile(r"<(a|img)\b[^>]*?\s(href|src)\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>]+)", re.I)


def _label(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip()).lower()


def links(md: Path, text: str | None = None) -> list[Link]:
    """Every link of a markdown text outside code: inline links and images, reference definitions, a
    ``[text][label]`` whose label has no definition, and HTML ``<a href>``/``<img src>``."""
    text = Path(md).read_text() if text is None else text
    masked = without_code(text)
    starts = _offsets(masked)

    def line(pos: int) -> int:
        import bisect

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
    kept = (ch for ch in heading.strip().lower()
            if unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc" or ch in " -")  # fmt: skip
    return "".join(kept).replace(" ", "-")


def heading_text(raw: str) -> str:
    """A heading's text as GitHub renders it (what its slug is made from): code spans, links, images, emphasis and
    HTML tags reduced to their text."""
    protect = lambda m: "\x00" + m[2].strip().replace("_", "\x01").replace("*", "\x02") + "\x00"  # noqa: E731
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
        elif (i > 0 and re.match(r"^[ ]{0,3}(=+|-+)[ \t]*$", line) and lines[i - 1].strip()
              and not re.match(r"^[ ]{0,3}([-*+>|#]|\d+[.)])", lines[i - 1])):  # fmt: skip
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
    if not _within(target, root):
        return LinkResult(link, False, f"{dest}: {target} is outside the repository")
    if not target.exists():
        return LinkResult(link, False, f"{dest}: no file or directory {display(target)}")
    if target != source and _git_ignored(target, root):
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
        return LinkResult(link, False, f"{dest}: no heading or id {anchor!r} in {display(target)}"
                          + (f" (near: {', '.join(close)})" if close else ""))  # fmt: skip
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


# ---- the documents, and the report ---------------------------------------------------------------------------------


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
        return (f"{len(results)} links in {len({r.link.file for r in results})} file(s): {checked} checked, "
                f"{len(results) - checked} external skipped, {len(failures(results))} failed; by kind: "
                + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))  # fmt: skip
    kinds = Counter(r.kind for r in results)
    skipped = sum(r.ok is None for r in results)
    files = len({r.command.file for r in results})
    text = (f"{len(results)} commands in {files} file(s), {len(failures(results))} failed, {skipped} skipped; by kind: "
            + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))  # fmt: skip
    if dry_runs is not None and dry_runs.plans:
        total = sum(s for _, s, _ in dry_runs.plans)
        text += f"\n{len(dry_runs.plans)} distinct plans, {total:.0f} s:" + "".join(
            f"\n  {s:6.1f} s {'ok  ' if ok else 'FAIL'} {c}" for c, s, ok in dry_runs.plans)  # fmt: skip
    return text
