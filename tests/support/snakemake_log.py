"""A Snakemake run's jobs read from its log, and scheduled on more cores: what benchmarks/study_time.py and
benchmarks/study_designs.py measure a study with, and tests/study/test_study_time.py checks.

A job's seconds run from the timestamp before its ``rule``/``localrule`` header to the one before its ``Finished
jobid`` line (whole seconds, as Snakemake logs them), so they include the job's start-up (the interpreter and its
imports). ``simulate`` schedules the jobs, with their measured seconds, on a number of cores: the DAG is the log's own
(a job needs the jobs whose outputs are its inputs), and a free core takes the ready job Snakemake started first in
the measured run. A job's seconds are taken as they were measured, whatever the cores: the cores do not share memory
bandwidth or caches in the simulation."""

from __future__ import annotations

import collections
import heapq
import re
from dataclasses import dataclass
from datetime import datetime

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
HEADER = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")
LOG = re.compile(r"^\s+log: (\S+)$")
LINE_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d{3} ")  # a line of a job's own log (core.logs)
INPUT = re.compile(r"^\s+input: (.+)$")
OUTPUT = re.compile(r"^\s+output: (.+)$")
THREADS = re.compile(r"^\s+threads: (\d+)$")
CORES = re.compile(r"^Provided cores: (\d+)$")


@dataclass
class Job:
    rule: str
    started: datetime
    finished: datetime | None = None
    log: str | None = None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    threads: int = 1

    @property
    def seconds(self) -> float:
        return (self.finished - self.started).total_seconds()


def parse(lines) -> dict[int, Job]:
    """jobid -> Job for every job the log saw finish: its rule, times, log file, files and threads (the header's
    lines between ``rule`` and ``jobid``, and ``threads:`` after it)."""
    stamp = header = None
    jobs: dict[int, Job] = {}
    current: Job | None = None
    for line in lines:
        if m := STAMP.match(line):
            stamp = datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
        elif m := HEADER.match(line):
            header, current = Job(m.group(1), stamp), None
        elif header and (m := LOG.match(line)):
            header.log = m.group(1)
        elif header and (m := INPUT.match(line)):
            header.inputs = tuple(m.group(1).split(", "))
        elif header and (m := OUTPUT.match(line)):
            header.outputs = tuple(m.group(1).split(", "))
        elif header and (m := JOBID.match(line)):
            jobs[int(m.group(1))] = current = header
            header = None
        elif current and (m := THREADS.match(line)):
            current.threads = int(m.group(1))
        elif (m := FINISHED.match(line)) and int(m.group(1)) in jobs:
            jobs[int(m.group(1))].finished = stamp
            current = None
    return {j: job for j, job in jobs.items() if job.finished}


def simulate(jobs: dict[int, Job], cores: int) -> float:
    """The wall seconds of ``jobs`` scheduled greedily on ``cores``: a job is ready once the jobs that wrote its
    inputs have finished, and a free core takes the ready job that started first in the measured run."""
    producer = {path: j for j, job in jobs.items() for path in job.outputs}
    needs = {j: {producer[p] for p in job.inputs if producer.get(p, j) != j} for j, job in jobs.items()}
    dependents = collections.defaultdict(list)
    for j, before in needs.items():
        for k in before:
            dependents[k].append(j)
    rank = {j: r for r, j in enumerate(sorted(jobs, key=lambda j: (jobs[j].started, j)))}
    ready = [(rank[j], j) for j, before in needs.items() if not before]
    heapq.heapify(ready)
    running: list[tuple[float, int]] = []
    now, free, left = 0.0, cores, {j: len(before) for j, before in needs.items()}
    while ready or running:
        waiting = []
        while ready:  # each free core takes the first ready job that fits it
            r, j = heapq.heappop(ready)
            threads = min(jobs[j].threads, cores)
            if threads <= free:
                free -= threads
                heapq.heappush(running, (now + jobs[j].seconds, j))
            else:
                waiting.append((r, j))
        for item in waiting:
            heapq.heappush(ready, item)
        now, j = heapq.heappop(running)
        free += min(jobs[j].threads, cores)
        for k in dependents[j]:
            left[k] -= 1
            if not left[k]:
                heapq.heappush(ready, (rank[k], k))
    return now
