"""Each command checked in its safe form, by its kind (the package's docstring says how): ``python -m`` and the
console scripts run with ``--help``, scripts compiled, install lines and pytest's test paths checked for the files
they name, the words of ``NOT_RUN`` for their file arguments. The snakemake commands' dry runs are plans.py's."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .args import walk
from .commands import CLASSIFY_IN, NOT_RUN, PLACEHOLDER_PATH, Command, console_scripts, is_python, python_target
from .markdown import PLACEHOLDER
from .paths import display, git_ignored, within

if TYPE_CHECKING:
    from .plans import DryRuns

HELP_TIMEOUT_S = 300
HAS_CLI = re.compile(
    r"\bargparse\b|\bArgumentParser\b|^\s*import click\b|@click\.|\btyper\b|@hydra\.main", re.MULTILINE
)
PIP_VALUE_OPTIONS = {
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "--python-version",
    "--platform",
    "--implementation",
    "--abi",
    "--only-binary",
    "--no-binary",
    "--progress-bar",
    "-C",
    "--config-settings",
    "--trusted-host",
    "--src",
    "--upgrade-strategy",
    "--report",
    "--cache-dir",
    "--log",
    "--timeout",
    "--retries",
    "--proxy",
    "--cert",
    "--client-cert",
    "--python",
    "--exists-action",
    "--global-option",
    "--install-option",
    "--root-user-action",
    "--keyring-provider",
    "--group",
}
PIP_FILE_OPTIONS = {
    "-r": "requirements file",
    "--requirement": "requirements file",
    "-c": "constraints file",
    "--constraint": "constraints file",
    "-e": "project",
    "--editable": "project",
}
PIP_NARGS = dict.fromkeys(PIP_VALUE_OPTIONS | PIP_FILE_OPTIONS.keys(), 1)
PYTEST_VALUE_OPTIONS = {
    "-k",
    "-m",
    "-n",
    "--numprocesses",
    "-p",
    "--durations",
    "--durations-min",
    "--dist",
    "-c",
    "--rootdir",
    "--maxfail",
    "-o",
    "--override-ini",
    "--junitxml",
    "--junit-xml",
    "--basetemp",
    "--tb",
    "-W",
    "--pythonwarnings",
    "--confcutdir",
    "--import-mode",
    "--log-level",
    "--capture",
    "--maxprocesses",
    "--max-worker-restart",
    "-r",
    "--cov",
    "--cov-report",
    "--timeout",
}
PYTEST_PATH_OPTIONS = {"--deselect", "--ignore", "--ignore-glob"}
PYTEST_NARGS = dict.fromkeys(PYTEST_VALUE_OPTIONS | PYTEST_PATH_OPTIONS, 1)


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
        return Result(cmd, "unclassified", False, f"{what} is not a checked kind: classify it in {CLASSIFY_IN}")
    if Path(cmd.argv[0]).name in ("bash", "sh"):
        return Result(
            cmd,
            "unclassified",
            False,
            f"of the scripts run by {cmd.argv[0]}, only envs/install-*.sh is classified (an install, not "
            f"run): classify this one in {CLASSIFY_IN}",
        )
    return Result(
        cmd,
        "unclassified",
        False,
        f"command word {cmd.argv[0]!r} is not classified: add it to NOT_RUN in {CLASSIFY_IN} with "
        f"the reason it is not run, or make it a checked kind",
    )


def _run_help(cmd: Command, argv: list[str], kind: str) -> Result:
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            argv,
            check=False,
            capture_output=True,
            text=True,
            cwd=cmd.cwd,
            timeout=HELP_TIMEOUT_S,
            env={**os.environ, **cmd.env},
        )
    except subprocess.TimeoutExpired:
        return Result(cmd, kind, False, f"`{' '.join(argv[1:])}` ran past {HELP_TIMEOUT_S} s")
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        why = output_tail(proc.stderr or proc.stdout)
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
        return Result(
            cmd,
            kind,
            False,
            f"{display(Path(origin))} has no argparse --help, and --help given to it would run its real "
            f"work: give it a CLI, or classify it in {CLASSIFY_IN}",
        )
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
            if not list(Path("/").glob(expanded.lstrip("/"))) and not git_ignored(Path(expanded), root):
                return f"nothing matches {display(Path(expanded))}"
        elif not Path(expanded).exists() and not git_ignored(Path(expanded), root):
            return f"no file {display(Path(expanded))}"
    return None


def _braces(text: str) -> list[str]:
    m = re.search(r"\{([^{}]*,[^{}]*)\}", text)
    if not m:
        return [text]
    return [e for part in m[1].split(",") for e in _braces(text[: m.start()] + part + text[m.end() :])]


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
        if any(within(path, m) for m in cmd.made):
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
        for opt, values in walk(args[1:], PIP_NARGS, glued=("-r", "-c", "-e")):
            what = PIP_FILE_OPTIONS.get(opt)
            if what == "project" and ("://" in values[0] or values[0].startswith("git+")):
                continue  # -e URL: nothing of the repository's
            if what:
                need(values[0], what)
            elif opt is None and "://" not in values[0]:
                bare = values[0].split("[")[0]
                if bare in (".", "..") or "/" in bare or re.search(r"\.(whl|tar\.gz|zip)$", bare):
                    need(bare, "project" if Path(os.path.normpath(cwd / bare)).is_dir() else "file")
    if problems:
        return Result(cmd, "install (files checked)", False, "; ".join(problems))
    return Result(cmd, "install (files checked)", True, f"not run; exists: {', '.join(named) or 'nothing named'}")


def _check_pytest(cmd: Command) -> Result:
    args = python_target(cmd.argv)[2] if is_python(cmd.argv[0]) else cmd.argv[1:]
    problems, named = [], []
    for opt, paths in walk(args, PYTEST_NARGS):
        if opt is not None and opt not in PYTEST_PATH_OPTIONS:
            continue
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
                    if not re.search(rf"^\s*(async\s+)?(def|class)\s+{re.escape(name)}\b", source, re.MULTILINE):
                        problems.append(f"{display(path)} defines no {name}")
    if problems:
        return Result(cmd, "pytest (paths checked)", False, "; ".join(problems))
    return Result(
        cmd,
        "pytest (paths checked)",
        True,
        f"not run (it would run this test again); exists: {', '.join(named) or 'the default test paths'}",
    )


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


def output_tail(text: str, limit: int = 1500) -> str:
    """The part of a command's output that says why it failed: from its first error line, at most ``limit``
    characters."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    for i in reversed(range(len(lines))):  # the last error named: a traceback's own, or Snakemake's
        if re.search(r"Error\b|Exception\b|error:|No module named", lines[i]):
            lines = lines[i : i + 12]
            break
    text = "\n".join(lines[-12:])
    return text if len(text) <= limit else text[:limit] + " [...]"
