"""A markdown file's commands: each simple command of its shell blocks (markdown.py reads them), with where it runs
and what its block made before it (a ``cd``, a venv, a clone carry into the block's later commands), and its kind
(``classify``), which says how checks.py checks it. A command word of no kind fails: classify it here, or add it to
``NOT_RUN`` with the reason it is not run."""

from __future__ import annotations

import functools
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from support import ROOT

from .markdown import PLACEHOLDER, SHELL_TAGS, fenced_blocks, shell_lines, simple_commands
from .paths import display, within

# Command words that are classified as not run. Each with the reason; their file path arguments must still exist.
NOT_RUN = {
    "apptainer": "builds or runs an image: needs Apptainer, root or user namespaces and the network for the base "
    "images, none of which this machine has (the image builds have their own tests: tests/paper/images/test_containers*, "
    "tests/paper/images/test_analysis_root.py)",
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
GIT_CLONE_VALUE_OPTIONS = {
    "-b",
    "--branch",
    "--depth",
    "-o",
    "--origin",
    "--filter",
    "-c",
    "--config",
    "--reference",
    "-j",
    "--jobs",
    "--separate-git-dir",
    "-u",
    "--upload-pack",
    "--template",
}
PREFIXES = {"sudo", "env", "time", "nohup"}  # words before the command proper
# A file the reader supplies, `path/to/log.jsonl` or an upper-case name (`PATH`, `OTHER/results/...`): made empty
# where a plan reads it, so that the plan can be made.
PLACEHOLDER_PATH = re.compile(r"(path/to/|[A-Z][A-Z0-9_]*(/|$))")
CLASSIFY_IN = display(Path(__file__))  # where a new kind of command, or a word not run, is classified: this file


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
        section = re.search(r"^\[project\.scripts\]\n(.*?)(?=^\[|\Z)", text, re.MULTILINE | re.DOTALL)
        pairs = re.findall(r'^\s*"?([\w.-]+)"?\s*=\s*"([^"]+)"', section[1] if section else "", re.MULTILINE)
        return dict(pairs)
    return tomllib.loads(text).get("project", {}).get("scripts", {})


def classify(argv: list[str], root: Path = ROOT) -> str:
    word, base = argv[0], Path(argv[0]).name
    if base == "snakemake":
        return "snakemake"
    if is_python(word):
        how, target, _ = python_target(argv)
        if how == "m":
            return {
                "snakemake": "snakemake",
                "venv": "install",
                "virtualenv": "install",
                "pip": "install",
                "ensurepip": "install",
                "pytest": "pytest",
            }.get(target, "python -m")
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
                        if not within(new, root):
                            gone = f"after `{cmd.text}` (line {number}) leaves the repository: its layout cannot say"
                            cwd, cmd.verdict = None, (None, f"{new} is outside the repository: not checked")
                        elif new.is_dir():
                            cwd, cmd.verdict = new, (True, f"{display(new)} is a directory of the repository")
                        else:
                            cmd.verdict = (False, f"no directory {display(new)} in the repository")
                elif cmd.kind == "git clone":
                    rest = [
                        a
                        for i, a in enumerate(argv[2:], 2)
                        if not a.startswith("-") and argv[i - 1] not in GIT_CLONE_VALUE_OPTIONS
                    ]
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
