"""One run of the smoke study, from data to its evaluation and fit, through the repository's SLURM
profile on a real local cluster.

The profile is used as written except for what this machine cannot have or need: Apptainer
(not installable here), the site's partition and account (ours has one partition and no
accounting), and the status command (no accounting means sacct cannot answer; squeue can).

One run's chain covers every kind of mini job that does the study's work (data, tokenizer, model,
training, evaluation, fit); the rest of the DAG is more jobs of the same rules, or study jobs, which
tests/workflow/test_workflow.py runs locally. What SLURM adds is per job: submission with the
profile's resources, the job's environment, and no hub token in any of it.
"""

import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml
from contracts import check_eval, check_metrics
from entropy_rl.core import spec
from support import ROOT

pytestmark = pytest.mark.costly  # minutes of a core: scheduled first (tests/conftest.py)

pytest_plugins = ["slurm_cluster"]
SMOKE = ROOT / "tests" / "smoke" / "config.yaml"
RUN = "qwen2-xs-grpo"
TARGETS = [f"results/eval/{RUN}/summary.parquet", f"results/analysis/fits/{RUN}.json"]
SECRET = "hf_SENTINELdoNotLeak0123456789"  # a hub token the user has set in their shell
SECRET_OLD_NAME = "hf_SENTINELdoNotLeakEither987"  # and under huggingface_hub's older variable


def files_holding(root, text: str) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes())


def local_profile(cluster, directory):
    profile = yaml.safe_load((ROOT / "slurm" / "config.yaml").read_text())
    profile.pop("software-deployment-method")
    profile.pop("apptainer-args")
    profile["default-resources"]["slurm_partition"] = cluster.partition
    profile["default-resources"].pop("slurm_account")
    profile["default-resources"]["mem_mb_per_cpu"] = 1000
    profile["default-resources"]["cpus_per_task"] = 1
    profile.update(
        {
            "jobs": 2,
            "slurm-status-command": "squeue",
            "slurm-no-account": True,
            "slurm-init-seconds-before-status-checks": 1,
            "latency-wait": 10,
        }
    )
    directory.mkdir()
    (directory / "config.yaml").write_text(yaml.safe_dump(profile))
    return directory


def test_a_smoke_run_goes_through_the_slurm_profile(slurm_cluster, tmp_path):
    workdir = tmp_path / "study"
    workdir.mkdir()
    (workdir / "config.yaml").write_text(SMOKE.read_text())
    profile = local_profile(slurm_cluster, tmp_path / "profile")
    before = set(slurm_cluster.run("squeue", "--states=all", "--noheader", "--format=%i").stdout.split())
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(ROOT / "Snakefile"),
            "-d",
            str(workdir),
            "--profile",
            str(profile),
            *TARGETS,
        ],
        capture_output=True,
        text=True,
        cwd=workdir,
        timeout=1500,
        env={**slurm_cluster.env, "HF_TOKEN": SECRET, "HUGGING_FACE_HUB_TOKEN": SECRET_OLD_NAME},
    )
    wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-5000:] + slurm_cluster.log_tail()
    jobs = set(slurm_cluster.run("squeue", "--states=all", "--noheader", "--format=%i %T %j").stdout.splitlines())
    ours = sorted(line for line in jobs if line.split()[0] not in before)
    print(f"smoke run {RUN} through SLURM: {wall:.0f} s, {len(ours)} SLURM jobs: {ours}")
    assert ours and all(line.split()[1] == "COMPLETED" for line in ours)
    # The token reaches no log, parameter record, output, job script or job environment: slurmctld
    # keeps each job's script and submitted environment under its state directory
    # (hash.N/job.ID/{script,environment}), and the jobs' environment is what sbatch submitted.
    state = slurm_cluster.dir / "state"
    environments = {p.parent.name.removeprefix("job."): p for p in state.rglob("environment")}
    for job in ours:
        job_id = job.split()[0]
        assert job_id in environments, f"slurmctld kept no environment for job {job_id}"
        # NAME=value entries, each ended by NUL, after a 4-byte count
        entries = dict(e.split(b"=", 1) for e in environments[job_id].read_bytes().split(b"\0") if b"=" in e)
        assert b"HF_TOKEN" not in entries and b"HUGGING_FACE_HUB_TOKEN" not in entries
        assert entries[b"PATH"] == slurm_cluster.env["PATH"].encode()  # the rest of the environment reaches it
    for secret in (SECRET, SECRET_OLD_NAME):
        assert secret not in proc.stdout + proc.stderr
        assert files_holding(workdir, secret) == []
        assert files_holding(state, secret) == []
    assert list(state.rglob("script"))
    assert not (workdir / ".snakemake" / "slurm_job_environment").exists()  # removed once the run ends
    # No job went warm (core.warm_start): a cluster executor's jobs each run in a process of their own, as the user's
    # environment leaves them here (tests/conftest.py sets nothing).
    logs = sorted((workdir / "results" / "logs").rglob("*.log"))
    assert logs and not [str(p) for p in logs if "warm interpreter" in p.read_text() or "started cold" in p.read_text()]
    planned = int(next(line.split()[1] for line in proc.stderr.splitlines() if line.startswith("total ")))
    assert len(ours) == planned  # every job went through sbatch (there is no local `all` here)
    cfg = yaml.safe_load(SMOKE.read_text())["mini"]
    res = workdir / "results"
    validated = spec.domain_benchmarks(cfg, spec.train_domain(cfg, RUN))  # its training domain's
    check_metrics(
        pd.read_parquet(res / "runs" / RUN / "metrics.parquet"),
        validated,
        cfg["train"]["steps"],
        cfg["train"]["val_every"],
    )
    summary = pd.read_parquet(res / "eval" / RUN / "summary.parquet").set_index("benchmark")
    for b, bench in cfg["data"]["benchmarks"].items():
        check_eval(
            pd.read_parquet(res / "eval" / RUN / f"{b}.parquet"), summary.loc[b], bench["protocol"], bench["size"]
        )
