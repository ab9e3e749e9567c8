"""Where a Snakemake run's time went, read from its log: wall time, and job-seconds per rule.

    python benchmarks/study_time.py [.snakemake/log/<the run>.snakemake.log]

Without an argument it reads the newest log under .snakemake/log/. A job's seconds run from the
timestamp before its ``rule``/``localrule`` header to the one before its ``Finished jobid`` line
(whole seconds, as Snakemake logs them), so they include the job's start-up (the interpreter and
its imports). With N cores, N jobs run at once: job-seconds / wall time is the cores kept busy.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
HEADER = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")


def job_times(lines) -> dict[int, tuple[str, datetime, datetime]]:
    """jobid -> (rule, started, finished) for every job the log saw finish."""
    stamp = rule = None
    started: dict[int, tuple[str, datetime]] = {}
    done = {}
    for line in lines:
        if m := STAMP.match(line):
            stamp = datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
        elif m := HEADER.match(line):
            rule = m.group(1)
        elif (m := JOBID.match(line)) and rule:
            started[int(m.group(1))] = (rule, stamp)
            rule = None
        elif (m := FINISHED.match(line)) and int(m.group(1)) in started:
            name, t0 = started[int(m.group(1))]
            done[int(m.group(1))] = (name, t0, stamp)
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", nargs="?", type=Path)
    args = ap.parse_args()
    path = args.log or max(Path(".snakemake/log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime)
    jobs = job_times(path.read_text().splitlines())
    if not jobs:
        sys.exit(f"{path}: no finished job")
    by_rule = collections.defaultdict(list)
    for rule, t0, t1 in jobs.values():
        by_rule[rule].append((t1 - t0).total_seconds())
    wall = (max(t1 for _, _, t1 in jobs.values()) - min(t0 for _, t0, _ in jobs.values())).total_seconds()
    busy = sum(sum(s) for s in by_rule.values())
    print(f"{path}: {len(jobs)} jobs, wall {wall:.0f} s ({wall / 60:.1f} min), {busy:.0f} job-seconds "
          f"({busy / wall:.2f} jobs at once on average)")  # fmt: skip
    print(f"{'rule':<34} {'jobs':>5} {'job-s':>7} {'share':>6} {'mean':>6} {'max':>5}")
    for rule, secs in sorted(by_rule.items(), key=lambda kv: -sum(kv[1])):
        total = sum(secs)
        print(f"{rule:<34} {len(secs):5d} {total:7.0f} {100 * total / busy:5.1f}% {total / len(secs):6.1f} {max(secs):5.0f}")


if __name__ == "__main__":
    main()
