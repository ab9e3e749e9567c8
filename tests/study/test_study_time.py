"""benchmarks/study_time.py reads a Snakemake log's jobs (times, files, threads) and schedules them on more cores
(tests/support/snakemake_log.py)."""

from support import snakemake_log as study_time


def job(stamp: str, rule: str, jobid: int, inputs: str, outputs: str, threads: int = 1) -> str:
    lines = [
        f"[Sat Nov 28 08:{stamp} 2026]",
        f"rule {rule}:",
        f"    input: {inputs}",
        f"    output: {outputs}",
        f"    log: results/logs/{rule}.log",
        f"    jobid: {jobid}",
        "    reason: Missing output files",
    ]
    return "\n".join(lines + ([f"    threads: {threads}"] if threads > 1 else []) + ["    resources: tmpdir=/tmp", ""])


def finished(stamp: str, jobid: int) -> str:
    return f"[Sat Nov 28 08:{stamp} 2026]\nFinished jobid: {jobid} (Rule: x)\n"


# data (10 s) feeds two trainings (5 s and 8 s, one of two threads), which feed a figure (1 s); a job the log saw
# start but never finish is left out.
LOG = "\n".join(
    [
        "Provided cores: 2",
        job("00:00", "data", 1, "config.yaml", "a.parquet"),
        finished("00:10", 1),
        job("00:10", "train", 2, "a.parquet", "m1, m1/final"),
        job("00:10", "train", 3, "a.parquet, other.txt", "m2", threads=2),
        finished("00:15", 2),
        finished("00:18", 3),
        job("00:18", "figure", 4, "m1/final, m2", "fig.png"),
        finished("00:19", 4),
        job("00:19", "audit", 5, "fig.png", "audit.md"),
    ]
)


def test_the_log_gives_each_finished_job_its_times_files_and_threads():
    jobs = study_time.parse(LOG.splitlines())
    assert sorted(jobs) == [1, 2, 3, 4]
    assert [jobs[j].seconds for j in (1, 2, 3, 4)] == [10, 5, 8, 1]
    assert jobs[3].inputs == ("a.parquet", "other.txt") and jobs[2].outputs == ("m1", "m1/final")
    assert (jobs[2].threads, jobs[3].threads) == (1, 2)
    assert jobs[4].log == "results/logs/figure.log"


def test_the_schedule_follows_the_dag_and_the_cores():
    jobs = study_time.parse(LOG.splitlines())
    assert study_time.simulate(jobs, 1) == 10 + 5 + 8 + 1  # one job at a time
    # Two cores: the two-thread training holds both, so the trainings still run one after the other.
    assert study_time.simulate(jobs, 2) == 10 + 5 + 8 + 1
    assert study_time.simulate(jobs, 3) == 10 + 8 + 1  # side by side; the figure waits for the longer
    jobs[3].threads = 1
    assert study_time.simulate(jobs, 2) == 10 + 8 + 1
