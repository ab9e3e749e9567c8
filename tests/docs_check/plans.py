"""The snakemake commands' dry runs (the package's docstring says how a documented command becomes one): each
distinct plan made once (``plan_key``), in a temporary directory standing in for the repository root."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from support import ROOT, local_profile

from .args import OPTIONAL, SEVERAL, walk
from .checks import Result, output_tail
from .commands import PLACEHOLDER_PATH, Command, is_python, python_target
from .paths import display, within

FAKE_TOKEN = "hf_not_real"  # paper-scale plans refuse a gated model without a token (pipeline.cluster.before_jobs)
PLAN_TIMEOUT_S = 1200
# The options a dry run rewrites or leaves out, and how many values each takes; any other word is passed on as is.
SNAKEMAKE_NARGS = {
    "-d": 1,
    "--directory": 1,
    "-s": 1,
    "--snakefile": 1,
    "--profile": 1,
    "--report": OPTIONAL,
    "--report-stylesheet": 1,
    "--configfile": SEVERAL,
    "--configfiles": SEVERAL,
}


def plan_key(argv: list[str]) -> list[str]:
    """What makes two dry runs the same plan: the command line less -n and the cores or jobs, which a dry run does not
    use (``snakemake -n`` and ``snakemake --cores all`` plan the same jobs)."""
    key, previous = [], ""
    for a in argv:
        count = previous in ("-c", "--cores", "-j", "--jobs") and re.fullmatch(r"\d+|all", a)
        if not (
            count
            or a in ("-n", "--dry-run", "--dryrun", "-c", "--cores", "-j", "--jobs")
            or re.fullmatch(r"-[cj]\d+|--(cores|jobs)=.*", a)
        ):
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
        mirrored = (
            (self.mirror / cwd.relative_to(self.root) / path)
            if not path.is_absolute()
            else (self.base / "absolute" / path.relative_to(path.anchor))
        )
        mirrored = Path(os.path.normpath(mirrored))
        if not within(mirrored, self.base):
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
        out, problems, workdir, snakefile = [], [], None, False
        for opt, values in walk(args, SNAKEMAKE_NARGS):
            value = values[0] if values else ""
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
                pass
            elif opt in ("--configfile", "--configfiles"):
                for v in values:  # relative to where the command runs: copied into its stand-in
                    source = Path(os.path.normpath(cmd.cwd / v))
                    if not Path(v).is_absolute() and source.is_file():
                        (run_cwd / v).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy(source, run_cwd / v)
                out += [opt, *values]
            else:  # any other option as written, or a positional word
                out += values if opt is None else [opt]
        workdir = workdir or run_cwd
        for a in out:  # a path the reader supplies: made empty, where the plan reads it from
            path = a.partition("=")[2] if "=" in a and not a.startswith("-") else a
            if PLACEHOLDER_PATH.match(path):
                for where in {workdir, run_cwd}:
                    (where / path).parent.mkdir(parents=True, exist_ok=True)
                    (where / path).touch()
        full = [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            *([] if snakefile else ["-s", str(self.root / "Snakefile")]),
            *([] if "-d" in out else ["-d", str(workdir)]),
            *out,
        ]
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
            proc = subprocess.run(
                argv, check=False, capture_output=True, text=True, env=env, cwd=run_cwd, timeout=PLAN_TIMEOUT_S
            )
            seconds = time.perf_counter() - started
            if proc.returncode == 0:
                jobs = re.search(r"^total\s+(\d+)\s*$", proc.stdout + proc.stderr, re.MULTILINE)
                nothing = "Nothing to be done" in proc.stdout + proc.stderr
                what = f"{jobs[1]} jobs" if jobs else "nothing to do" if nothing else "planned"
                result = Result(cmd, "snakemake dry run", True, f"dry run: {what}, {seconds:.0f} s", seconds)
            else:
                why = output_tail(proc.stderr + "\n" + proc.stdout)
                result = Result(cmd, "snakemake dry run", False, f"dry run exited {proc.returncode}: {why}", seconds)
        except subprocess.TimeoutExpired:
            seconds = time.perf_counter() - started
            result = Result(cmd, "snakemake dry run", False, f"dry run ran past {PLAN_TIMEOUT_S} s", seconds)
        self.done[key] = result
        self.plans.append((cmd.text, seconds, bool(result.ok)))
        return result
