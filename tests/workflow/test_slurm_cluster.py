"""Jobs on a real (local, single-node) SLURM cluster: plain sbatch, a GPU job, and Snakemake's
SLURM executor submitting a GPU rule."""

import subprocess
import sys
import textwrap

# Registers the session-wide `slurm_cluster` fixture (one cluster however many modules ask).
pytest_plugins = ["slurm_cluster"]


def test_batch_job_completes(slurm_cluster, tmp_path):
    out = tmp_path / "job.out"
    job = slurm_cluster.submit(f"--output={out}", "--wrap=echo hello from $SLURM_JOB_ID")
    assert slurm_cluster.wait(job) == "COMPLETED"
    assert out.read_text().strip() == f"hello from {job}"
    assert job in slurm_cluster.run("squeue", "--states=all", "--noheader", "--format=%i").stdout.split()
    assert "JobState=COMPLETED" in slurm_cluster.run("scontrol", "show", "job", job).stdout


def test_gpu_job_sees_cuda_visible_devices(slurm_cluster, tmp_path):
    out = tmp_path / "gpu.out"
    job = slurm_cluster.submit(f"--output={out}", "--gres=gpu:1", "--wrap=echo $CUDA_VISIBLE_DEVICES")
    assert slurm_cluster.wait(job) == "COMPLETED"
    assert out.read_text().strip() in {"0", "1"}
    assert "TresPerNode=gres:gpu:1" in slurm_cluster.run("scontrol", "show", "job", job).stdout


def test_snakemake_slurm_executor_runs_gpu_rule(slurm_cluster, tmp_path):
    # `gpu=1` becomes sbatch --gpus=1 (plugin 2.8 rejects --gres/--gpus inside slurm_extra);
    # inside the job the jobstep plugin runs the rule with srun --gpus=1.
    (tmp_path / "Snakefile").write_text(
        textwrap.dedent(
            """\
            rule gpu:
                output: "gpu.txt"
                resources: gpu=1
                shell: "echo $CUDA_VISIBLE_DEVICES > {output}"
            """
        )
    )
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-d",
        str(tmp_path),
        "-s",
        str(tmp_path / "Snakefile"),
        "--executor",
        "slurm",
        "--jobs",
        "1",
        "--default-resources",
        f"slurm_partition={slurm_cluster.partition}",
        "runtime=10",
        "mem_mb=100",
        # No slurmdbd: the default status command, sacct, fails ("accounting storage is
        # disabled") and Snakemake waits forever; squeue works, as finished jobs stay listed
        # for MinJobAge. Poll after 1 s rather than the default 40 s.
        "--slurm-status-command",
        "squeue",
        "--slurm-init-seconds-before-status-checks",
        "1",
        # No accounts either (a no-op in plugin 2.8.0, which then fails harmlessly to guess one).
        "--slurm-no-account",
    ]
    run = subprocess.run(cmd, env=slurm_cluster.env, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "gpu.txt").read_text().strip() in {"0", "1"}
