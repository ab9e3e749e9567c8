"""Pre-emption through Snakemake: a training job killed mid-run, then `snakemake` again.

The rerun resumes from the job's last checkpoint and ends with the metrics and
weights of an uninterrupted run of the same spec; nothing half-written is left
under an output's name at any point.
"""

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import psutil
import pytest
import support
import torch
import yaml
from support import ROOT
from transformers import AutoModelForCausalLM

pytestmark = pytest.mark.costly  # minutes of a core: scheduled first (tests/conftest.py)

RUN = "qwen2-xs-grpo"
TARGET = f"results/runs/{RUN}/metrics.parquet"


def snakemake(workdir, *args, wait=True):
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir), "--cores", "1", *args]
    if wait:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    # Its own process group, so a test can signal snakemake and its jobs together (and nothing else).
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def one_run_config(steps: int) -> dict:
    cfg = support.one_run_config(RUN)
    cfg["mini"]["train"].update(steps=steps, save_every=2)
    return cfg


def training_job(snakemake_proc: subprocess.Popen) -> psutil.Process | None:
    """The process running the train rule's script, among the processes this test started."""
    for child in psutil.Process(snakemake_proc.pid).children(recursive=True):
        try:
            if any("train.py" in part for part in child.cmdline()):
                return child
        except psutil.NoSuchProcess:
            continue
    return None


def weights(path):
    return AutoModelForCausalLM.from_pretrained(path).state_dict()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("resume")
    (workdir / "config.yaml").write_text(yaml.safe_dump(one_run_config(steps=8)))
    proc = snakemake(workdir, TARGET)
    assert proc.returncode == 0, proc.stderr[-4000:]
    run_dir = workdir / "results" / "runs" / RUN
    assert not (run_dir / "checkpoints").exists()
    return workdir, pd.read_parquet(run_dir / "metrics.parquet"), weights(run_dir / "final")


def interrupt(workdir, stop) -> list[str]:
    """Train the run again (forced) and call ``stop`` on the snakemake process once the
    checkpoint after step 3 exists; return the checkpoints left behind."""
    run_dir = workdir / "results" / "runs" / RUN
    proc = snakemake(workdir, TARGET, "--forcerun", "train", wait=False)
    deadline = time.monotonic() + 600
    while not (run_dir / "checkpoints" / "step_000004").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the job ended before its second checkpoint"
        time.sleep(0.05)
    stop(proc)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode != 0, out[-3000:]
    # Neither output exists, whole or in part; only hidden temporaries could remain.
    assert not (run_dir / "metrics.parquet").exists() and not (run_dir / "final").exists()
    return sorted(p.name for p in (run_dir / "checkpoints").iterdir() if p.name.startswith("step_"))


def rerun_matches(workdir, kept, metrics, final) -> None:
    run_dir = workdir / "results" / "runs" / RUN
    # The newest finished checkpoint is at least step 4 (the stop may land after a later save). An older one is
    # left too when the stop lands between a save's rename and its removal of the one before (mini.checkpoints.save);
    # the resume takes the newest.
    assert kept and kept[-1] >= "step_000004" and len(kept) <= 2, kept
    proc = snakemake(workdir, TARGET)
    assert proc.returncode == 0, proc.stderr[-4000:]
    log = (workdir / "results" / "logs" / "train" / f"{RUN}.log").read_text()
    resumed_at = int(kept[-1].split("_")[1])
    print(f"stopped after checkpoint {kept[-1]}; the rerun resumed at step {resumed_at} of {len(metrics) - 1}")
    assert f"steps 0-{resumed_at - 1} done" in log
    pd.testing.assert_frame_equal(pd.read_parquet(run_dir / "metrics.parquet"), metrics, check_exact=True)
    after = weights(run_dir / "final")
    assert after.keys() == final.keys() and all(torch.equal(after[k], final[k]) for k in final)
    assert not (run_dir / "checkpoints").exists()
    assert snakemake(workdir, TARGET, "-n").stdout.count("rule train:") == 0  # and nothing is left to do


def test_a_killed_training_job_resumes_on_the_next_snakemake(uninterrupted):
    """The job dies (SIGKILL, as an out-of-memory kill or a lost node would do it); snakemake reports it."""
    workdir, metrics, final = uninterrupted

    def kill_job(proc):
        job = training_job(proc)
        assert job is not None
        job.send_signal(signal.SIGKILL)

    rerun_matches(workdir, interrupt(workdir, kill_job), metrics, final)


def test_a_stopped_snakemake_resumes_on_the_next(uninterrupted):
    """Snakemake and its job are told to stop (SIGTERM to the process group, as SLURM does on pre-emption
    or time-out, and Ctrl-C does with SIGINT): snakemake ends, releasing its lock, and the next resumes."""
    workdir, metrics, final = uninterrupted
    rerun_matches(workdir, interrupt(workdir, lambda proc: os.killpg(proc.pid, signal.SIGTERM)), metrics, final)


def test_the_same_run_trained_again_on_this_machine_repeats_bit_for_bit(uninterrupted):
    """What the reproducibility page promises on one machine: a run is a function of its seed. (Across machines it
    is not: another CPU's kernels round differently, docs/reproducibility.md.)"""
    workdir, metrics, final = uninterrupted
    run_dir = workdir / "results" / "runs" / RUN
    proc = snakemake(workdir, TARGET, "--forcerun", "train")
    assert proc.returncode == 0, proc.stderr[-4000:]
    pd.testing.assert_frame_equal(pd.read_parquet(run_dir / "metrics.parquet"), metrics, check_exact=True)
    again = weights(run_dir / "final")
    assert all(torch.equal(again[k], final[k]) for k in final)
