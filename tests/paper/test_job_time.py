"""A run longer than the site's longest job: each job stops before its time limit having lost nothing it saved and
logged, says whether the next goes on, and the estimate counts the jobs (paper.job_time, paper.train_job)."""

import itertools
import os
import sys
import time

import pytest
import yaml
from entropy_rl.core.scale import build
from entropy_rl.paper import job_time, saves, train_job
from entropy_rl.paper.cost import architectures, budget
from entropy_rl.pipeline import resources
from support import ROOT

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
SCALE = build("paper", PAPER)
# A trainer that resumes from its marker, trains a step every STEP_S seconds, saves every step whole (paper.saves)
# and logs it after its save, as verl does; argv: checkpoints, steps.
TRAINER = r"""
import json, os, sys, time
ckpt, steps = sys.argv[1], int(sys.argv[2])
marker = os.path.join(ckpt, "latest_checkpointed_iteration.txt")
start = int(open(marker).read()) if os.path.exists(marker) else 0
out = open(os.environ["VERL_FILE_LOGGER_PATH"], "w")
out.write(json.dumps({"step": start, "data": {"val-core/aime/acc/mean@1": start}}) + "\n"); out.flush()
for k in range(start + 1, steps + 1):
    time.sleep(float(os.environ.get("STEP_S", "0.3")))
    save = os.path.join(ckpt, f"global_step_{k}")
    os.makedirs(os.path.join(save, "actor"), exist_ok=True)
    for name in ("actor/model_world_size_1_rank_0.pt", "actor/optim_world_size_1_rank_0.pt",
                 "actor/extra_state_world_size_1_rank_0.pt", "data.pt"):
        open(os.path.join(save, name), "w").write(str(k))
    open(marker, "w").write(str(k))
    out.write(json.dumps({"step": k, "data": {"actor/entropy": 1 / k, "val-core/aime/acc/mean@1": k}}) + "\n"); out.flush()
"""


@pytest.mark.parametrize(
    "text, seconds", [("5:07", 307), ("1:00:00", 3600), ("2-03:04:05", 183845), ("UNLIMITED", None), ("INVALID", None)]
)
def test_squeues_time_left_is_read(text, seconds):
    assert job_time.parse_time_left(text) == seconds


def test_outside_slurm_a_job_has_no_limit_and_inside_it_counts_what_it_asked_for():
    assert job_time.job_end(60, env={}) == (None, "no time limit")
    end, how = job_time.job_end(60, env={"SLURM_JOB_ID": "1", "PATH": ""})  # no squeue reachable (a container)
    assert abs(end - time.time() - 3600) < 5 and "60 minutes" in how


def launched(ckpt, end_in_s, steps=40, step_s=0.5):
    """One job of the fake trainer (a step every ``step_s``) under a time limit ``end_in_s`` from now, with a 1-s
    margin, stopped after a save (PRIME's way)."""
    env = {**os.environ, "STEP_S": str(step_s)}
    os.environ.pop("SLURM_JOB_ID", None)
    original = job_time.job_end
    job_time.job_end = lambda runtime_minutes=None, env=os.environ: (time.time() + end_in_s, "the test's limit")
    try:
        return train_job.launch(
            [sys.executable, "-c", TRAINER, str(ckpt), str(steps)],
            env,
            ckpt,
            trainer="verl",
            keep=2,
            steps=steps,
            log_env="VERL_FILE_LOGGER_PATH",
            tensorboard=False,
            nodes=["localhost"],
            gpus_per_node=1,
            after_save=True,
            margin_s=1.0,
            poll_s=0.05,
        )
    finally:
        job_time.job_end = original


def test_a_run_longer_than_a_job_goes_on_job_after_job_with_every_step_once(tmp_path):
    from entropy_rl.paper import verl_metrics

    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    verdicts = []
    for _ in range(12):  # 16 steps of 0.5 s cannot fit in one job's 5 s, however fast this machine is
        ended = launched(ckpt, end_in_s=6.0, steps=16)
        status, why = ended.verdict()
        train_job.record(ckpt, ended, status, why)
        verdicts.append((status, ended.resumed, ended.reached))
        if status == 0:
            break
    print(verdicts)
    assert [v[0] for v in verdicts[:-1]] == [job_time.CONTINUE] * (len(verdicts) - 1) and verdicts[-1][0] == 0
    assert len(verdicts) >= 2 and all(b[1] == a[2] for a, b in itertools.pairwise(verdicts))  # each from the last save
    table = verl_metrics.to_metrics_table(verl_metrics.read_attempts(ckpt), ["aime"])
    assert list(table["step"]) == list(range(17))  # every step once
    resumed = verdicts[-1][
        1
    ]  # the last job kept the newest 2 saves it found and added its own (this trainer keeps all)
    assert saves.saved_steps(ckpt) == list(range(resumed - 1, 17))


def test_a_job_that_saves_nothing_before_its_limit_fails_and_a_repeated_failure_stops_the_run(tmp_path):
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    ended = launched(ckpt, end_in_s=3.0, steps=20, step_s=60)  # a step longer than the job
    status, why = ended.verdict()
    assert (status, ended.reached) == (1, 0) and "saved no step" in why and "max_job_minutes" in why
    train_job.record(ckpt, ended, status, why)
    assert train_job.refusal(ckpt) is None  # once may be bad luck
    train_job.record(ckpt, ended, status, why)
    status, why = train_job.refusal(ckpt)
    assert status == 1 and "failed without a new save" in why
    with open(ckpt / train_job.LEDGER, "a") as fh:
        fh.write('{"job": "local", "at": 1')  # a job killed while appending its line: the line is left out
    assert train_job.refusal(ckpt)[0] == 1


def test_a_job_at_its_time_limit_does_not_launch_again_when_snakemake_retries_it_inside(tmp_path, monkeypatch):
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    monkeypatch.setenv("SLURM_JOB_ID", "41")
    train_job.record(ckpt, train_job.Ended(-15, 0, 8, 24, time.time(), True), job_time.CONTINUE, "limit")
    assert train_job.refusal(ckpt)[0] == job_time.CONTINUE  # the same SLURM job, retried by its own Snakemake
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    assert train_job.refusal(ckpt) is None  # the next SLURM job launches


def test_the_estimate_counts_each_runs_jobs_and_their_start_up_and_no_job_asks_for_more_than_the_site_allows():
    questions = sum(b["size"] for b in PAPER["data"]["benchmarks"].values())
    run_id = "qwen2.5-7b-grpo"
    run, placement = SCALE.runs[run_id], SCALE.placement(run_id)
    t = budget.train_time(run, placement, architectures.of_model(SCALE, run.model), PAPER["budget"], questions)
    startup = PAPER["pilot"]["startup_minutes"]
    jobs = t.jobs(2880, startup)
    usable = 48 - startup / 60 - t.validation_s / 3600 - t.lost_s / 3600 - job_time.MARGIN_S / 3600
    assert jobs == -(-t.wall_s / 3600 // usable) and jobs > 10  # about 580 h of wall time in 48-h jobs
    hours = budget.job_hours(SCALE)[f"train:{run_id}"]
    extra = (jobs * startup * 60 + (jobs - 1) * (t.validation_s + t.lost_s)) * t.gpus / 3600
    assert hours == pytest.approx(t.wall_s * t.gpus / 3600 + extra)
    day_long = build("paper", {**PAPER, "launch": {"max_job_minutes": 1440}})
    assert budget.train_jobs(day_long)[run_id] > jobs  # 24-h jobs: more of them
    res = resources.train_resources(placement, hours, 1.5, "--export-file=x", 2880)
    assert res["runtime"] == 2880 and "--requeue" in res["slurm_extra"]
    assert resources.train_retries(SCALE, PAPER["budget"]) >= 2 * jobs + 1
    assert t.jobs(60, 59) is None  # a job that cannot hold its start-up and a save interval
    message = budget.jobs_message(build("paper", {**PAPER, "launch": {"max_job_minutes": 60}}), [run_id])
    assert "one job cannot hold the start-up and a save interval of 1 run(s) (qwen2.5-7b-grpo)" in message
    assert f"{jobs:.0f} for qwen2.5-7b-grpo, the most" in budget.jobs_message(SCALE, [run_id, "qwen2.5-0.5b-grpo"])


def test_the_estimate_states_the_disk_each_run_holds_at_most():
    arch = architectures.of_model(SCALE, "qwen2.5-32b")
    assert 32.0e9 < arch.parameters < 33.5e9  # Qwen2.5-32B: 32.8B parameters
    disk = budget.peak_disk_bytes(SCALE, ["qwen2.5-32b-grpo", "qwen2.5-7b-prime"])
    assert disk["qwen2.5-32b-grpo"] == pytest.approx(4 * 12 * arch.parameters)  # 4 saves of 12 bytes a parameter
    seven = architectures.of_model(SCALE, "qwen2.5-7b").parameters
    assert disk["qwen2.5-7b-prime"] == pytest.approx(4 * 2 * 12 * seven)  # the actor and the implicit PRM
    message = budget.disk_message(SCALE, ["qwen2.5-32b-grpo", "qwen2.5-7b-prime"])
    assert "1.57 TB for qwen2.5-32b-grpo" in message and "at most 4 saves a run" in message
