"""A run longer than the site's longest job, through a real SLURM cluster: each job is killed by SLURM at its time
limit unless it stops first, and the run is trained by several jobs that Snakemake submits one after another (the
retries set from onstart, as the workflow sets train_verl's), each resuming from the last whole save (paper.train_job,
paper.job_time).

The trainer is a stand-in with verl's save and log order (tests/paper/test_job_time.py's TRAINER: whole saves, the
marker, then the step's record): verl itself trains on this machine in the pilot's tests, not under SLURM here. What
runs for real: sbatch with the rule's runtime as SLURM's time limit, squeue's time left as the job's end, the launch
and its stop before that end, Snakemake's resubmission through snakemake-executor-plugin-slurm, and the run's table
read from every job's log.
"""

import json
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml
from support import ROOT

pytestmark = pytest.mark.costly  # three one-minute SLURM jobs, mostly waiting: scheduled first (tests/conftest.py)

pytest_plugins = ["slurm_cluster"]
sys.path.insert(0, str(ROOT / "tests" / "paper"))
STEPS, STEP_S = 24, 5  # 2 minutes of training: no fewer than 3 one-minute jobs, each ending 20 s before its limit

SNAKEFILE = """
import os, sys
sys.path.insert(0, {workflow!r})
from entropy_rl.paper import job_time, train_job, verl_metrics

onstart:  # as the workflow's Snakefile sets train_verl's (pipeline.cluster.continue_long_runs)
    if not workflow.local_exec:
        workflow.get_rule("train").restart_times = 5

rule train:
    output: "runs/r/metrics.parquet"
    log: "logs/train.log"
    resources: runtime=1
    run:
        ckpt = "runs/r/checkpoints"
        os.makedirs(ckpt, exist_ok=True)
        refused = train_job.refusal(ckpt)
        if refused:
            raise RuntimeError(f"exit {{refused[0]}}: {{refused[1]}}")
        ended = train_job.launch([sys.executable, "-c", {trainer!r}, ckpt, "{steps}"], {{**os.environ, "STEP_S": "{step_s}"}},
                                 ckpt, trainer="verl", keep=2, steps={steps}, log_env="VERL_FILE_LOGGER_PATH",
                                 tensorboard=False, nodes=["localhost"], gpus_per_node=1, runtime_minutes=resources.runtime,
                                 after_save=True, margin_s=20, poll_s=0.5)
        status, why = ended.verdict()
        train_job.record(ckpt, ended, status, why)
        if status:  # a run: block raises (a SystemExit would stop Snakemake's job thread, not fail the job)
            raise RuntimeError(f"exit {{status}}: {{why}}")
        verl_metrics.to_metrics_table(verl_metrics.read_attempts(ckpt), ["aime"]).to_parquet(output[0])
"""


def test_a_run_longer_than_two_jobs_is_trained_by_several_with_every_step_once(slurm_cluster, tmp_path):
    from test_job_time import TRAINER

    work = tmp_path / "study"
    work.mkdir()
    (work / "Snakefile").write_text(
        SNAKEFILE.format(workflow=str(ROOT / "workflow"), trainer=TRAINER, steps=STEPS, step_s=STEP_S)
    )
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "executor": "slurm",
                "jobs": 1,
                "latency-wait": 10,
                "slurm-status-command": "squeue",
                "slurm-no-account": True,
                "slurm-init-seconds-before-status-checks": 1,
                "default-resources": {
                    "slurm_partition": slurm_cluster.partition,
                    "mem_mb_per_cpu": 1000,
                    "cpus_per_task": 1,
                },
            }
        )
    )
    before = set(slurm_cluster.run("squeue", "--states=all", "--noheader", "--format=%i").stdout.split())
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", str(profile), "runs/r/metrics.parquet"],
        capture_output=True,
        text=True,
        cwd=work,
        timeout=900,
        env=slurm_cluster.env,
    )
    wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-5000:] + slurm_cluster.log_tail()
    jobs = slurm_cluster.run("squeue", "--states=all", "--noheader", "--format=%i %T %l %M").stdout.splitlines()
    ours = sorted((line.split() for line in jobs if line.split()[0] not in before), key=lambda x: int(x[0]))
    ledger = [json.loads(x) for x in (work / "runs" / "r" / "checkpoints" / "jobs.jsonl").read_text().splitlines()]
    inside = [p.read_text() for p in (work / ".snakemake" / "slurm_logs").rglob("*.log")]
    assert inside and not [text for text in inside if "Trying to restart" in text]  # no retry inside a SLURM job
    print(f"{wall:.0f} s; SLURM jobs (id, state, limit, time used): {ours}")
    print("each job's steps:", [(x["job"], x["resumed"], x["reached"], x["status"]) for x in ledger])
    assert [x[2] for x in ours] == ["1:00"] * len(ours)  # every job under SLURM's one-minute limit
    assert [x[1] for x in ours] == ["FAILED"] * (len(ours) - 1) + ["COMPLETED"]  # ended before it: none TIMEOUT
    assert len(ledger) == len(ours) >= 3 and [x["job"] for x in ledger] == [x[0] for x in ours]
    assert [x["status"] for x in ledger] == [75] * (len(ledger) - 1) + [0]  # continued, continued, ..., done
    # each from the last save
    assert all(b["resumed"] == a["reached"] > a["resumed"] for a, b in zip(ledger, ledger[1:]))
    assert ledger[-1]["reached"] == STEPS
    table = pd.read_parquet(work / "runs" / "r" / "metrics.parquet")
    assert list(table["step"]) == list(range(STEPS + 1))  # every step once
    assert table["val_acc"].tolist() == list(range(STEPS + 1))
