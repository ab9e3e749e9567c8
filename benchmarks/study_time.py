"""Where a Snakemake run's time went, read from its log: wall time, and job-seconds per rule.

    python benchmarks/study_time.py [.snakemake/log/<the run>.snakemake.log] [--before OTHER.snakemake.log] [--startup]
                                    [--simulate 2 4 8 16]

Without an argument it reads the newest log under .snakemake/log/. A job's seconds run from the
timestamp before its ``rule``/``localrule`` header to the one before its ``Finished jobid`` line
(whole seconds, as Snakemake logs them), so they include the job's start-up (the interpreter and
its imports). With N cores, N jobs run at once: job-seconds / wall time is the cores kept busy.
``--before`` sets another run's log beside it, rule by rule; ``--startup`` prints each rule's start-up, from the
job's start to the first line its own log stamps. ``--simulate`` schedules the run's jobs, with their measured
seconds, on each number of cores: the DAG is the log's own (a job needs the jobs whose outputs are its inputs), and
a free core takes the ready job Snakemake started first in the measured run. A job's seconds are taken as they were
measured, whatever the cores: the cores do not share memory bandwidth or caches in the simulation."""

from __future__ import annotations

import argparse
import collections
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tests/support, shared with the tests
from support.snakemake_log import CORES, LINE_STAMP, parse, simulate  # benchmarks/study_designs.py takes them too


def schedules(path: Path, core_counts: list[int]) -> None:
    lines = path.read_text().splitlines()
    jobs = parse(lines)
    if not jobs:
        sys.exit(f"{path}: no finished job")
    measured = (max(j.finished for j in jobs.values()) - min(j.started for j in jobs.values())).total_seconds()
    ran_on = next((int(m.group(1)) for line in lines if (m := CORES.match(line))), None)
    busy = sum(j.seconds for j in jobs.values())
    print(f"{path}: {len(jobs)} jobs, {busy:.0f} job-seconds, measured on {ran_on} cores in {measured / 60:.1f} min")
    print(f"{'cores':>5} {'simulated min':>13}  measured")
    for cores in core_counts:
        wall = simulate(jobs, cores)
        note = f"{measured / 60:.1f} min ({100 * (wall - measured) / measured:+.1f}%)" if cores == ran_on else ""
        print(f"{cores:5d} {wall / 60:13.1f}  {note}")


def startup(path: Path, workdir: Path) -> None:
    """Per rule, the seconds from a job's start to the first line its script logs (the interpreter, the imports and
    the job's set-up, whole seconds as Snakemake stamps them), summed over its jobs: what fewer processes would save."""
    rows = collections.defaultdict(list)
    for job in parse(path.read_text().splitlines()).values():
        rule, t0, log = job.rule, job.started, job.log
        first = (
            next((m.group(1) for line in _lines(workdir / log) if (m := LINE_STAMP.match(line))), None) if log else None
        )
        if first:
            rows[rule].append(max(0.0, (datetime.strptime(first, "%Y-%m-%d %H:%M:%S") - t0).total_seconds()))
    print(f"{'rule':<34} {'jobs':>5} {'start-up s':>10} {'mean':>6}")
    for rule, secs in sorted(rows.items(), key=lambda kv: -sum(kv[1])):
        print(f"{rule:<34} {len(secs):5d} {sum(secs):10.0f} {sum(secs) / len(secs):6.1f}")
    print(f"{'all':<34} {sum(map(len, rows.values())):5d} {sum(map(sum, rows.values())):10.0f}")


def _lines(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines() if path.is_file() else []


def by_rule(path: Path) -> tuple[dict[str, list[float]], float]:
    """Each rule's job seconds, and the wall time, of the Snakemake log at ``path``."""
    jobs = parse(path.read_text().splitlines())
    if not jobs:
        sys.exit(f"{path}: no finished job")
    rules = collections.defaultdict(list)
    for job in jobs.values():
        rules[job.rule].append(job.seconds)
    return rules, (max(j.finished for j in jobs.values()) - min(j.started for j in jobs.values())).total_seconds()


def summary(path: Path, rules: dict, wall: float) -> str:
    busy = sum(sum(s) for s in rules.values())
    return (
        f"{path}: {sum(map(len, rules.values()))} jobs, wall {wall:.0f} s ({wall / 60:.1f} min), {busy:.0f} job-seconds "
        f"({busy / wall:.2f} jobs at once on average)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", nargs="?", type=Path)
    ap.add_argument("--before", type=Path, help="another run's log, set beside it rule by rule")
    ap.add_argument("--startup", action="store_true", help="each rule's start-up: job start to the first line it logs")
    ap.add_argument("--simulate", type=int, nargs="+", metavar="CORES", help="the run's jobs scheduled on these cores")
    args = ap.parse_args()
    path = args.log or max(Path(".snakemake/log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime)
    if args.simulate:
        return schedules(path, args.simulate)
    if args.startup:  # the jobs' logs are relative to the working directory, two levels above .snakemake/log
        return startup(path, path.resolve().parents[2])
    rules, wall = by_rule(path)
    busy = sum(sum(s) for s in rules.values())
    if args.before:
        old, old_wall = by_rule(args.before)
        print(summary(args.before, old, old_wall) + "\n" + summary(path, rules, wall))
        print(f"{'rule':<34} {'jobs':>11} {'job-s':>13} {'change':>7}")
        for rule in sorted(set(old) | set(rules), key=lambda r: -sum(old.get(r, [])) - sum(rules.get(r, []))):
            a, b = sum(old.get(rule, [])), sum(rules.get(rule, []))
            change = f"{100 * (b - a) / a:+.0f}%" if a else ""
            print(f"{rule:<34} {len(old.get(rule, [])):5d} {len(rules.get(rule, [])):5d} {a:6.0f} {b:6.0f} {change:>7}")
        total = sum(sum(s) for s in old.values())
        print(
            f"{'total':<34} {sum(map(len, old.values())):5d} {sum(map(len, rules.values())):5d} {total:6.0f} {busy:6.0f} "
            f"{100 * (busy - total) / total:+6.0f}%; wall {old_wall / 60:.1f} -> {wall / 60:.1f} min"
        )
        return
    print(summary(path, rules, wall))
    print(f"{'rule':<34} {'jobs':>5} {'job-s':>7} {'share':>6} {'mean':>6} {'max':>5}")
    for rule, secs in sorted(rules.items(), key=lambda kv: -sum(kv[1])):
        total = sum(secs)
        print(
            f"{rule:<34} {len(secs):5d} {total:7.0f} {100 * total / busy:5.1f}% {total / len(secs):6.1f} {max(secs):5.0f}"
        )


if __name__ == "__main__":
    main()
