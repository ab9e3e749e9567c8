"""The paper-scale DAG, planned through the SLURM profile: jobs per stage, the GPU-hours estimate,
the gated-model check, per-job resources that scale with the model, and no SLURM job given the
hub token."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest
import yaml
from entropy_rl.core import paths
from entropy_rl.pipeline import resources
from support import ROOT, job_resources, plan

pytestmark = pytest.mark.costly  # minutes of a core: scheduled first (tests/conftest.py)

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
TOKENS = {"HF_TOKEN": "hf_SENTINELplanDoNotLeak0123", "HUGGING_FACE_HUB_TOKEN": "hf_SENTINELplanDoNotLeak4567"}
# The flag that gives a SLURM job the workflow's environment less the token (pipeline.resources).
JOB_ENV_FLAG = "--export-file=.snakemake/slurm_job_environment"
LOCAL_RULES = {
    "all",
    "download_model",
    "download_dataset",
    "check_source",
    "preflight",
    "preflight_eval",
    "preflight_power",
}  # run by the main process, not sbatch
POWER = PAPER["power_sampling"]
# The power-sampling study's jobs: base, low temperature, power, the RL checkpoints, and the sweep
# points other than the main setting (entropy_rl.core.power.methods).
POWER_METHODS = (
    3
    + sum(k in POWER for k in ("smc", "sps"))
    + len(POWER["runs"])
    + sum(a != POWER["alpha"] for a in POWER["sweeps"]["alpha"])
    + sum(n != POWER["n_mcmc"] for n in POWER["sweeps"]["n_mcmc"])
)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("paper")
    shutil.copy(ROOT / "config.yaml", d / "config.yaml")
    return d


@pytest.fixture(scope="module")
def dry_run(workdir):
    proc, seconds = plan(workdir, "all", env_extra={"HF_TOKEN": "hf_test_token_not_real"})
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    print(f"paper-scale plan: {seconds:.1f} s")
    return proc, seconds


def jobs_per_rule(text):
    table = re.search(r"Job stats:\njob\s+count\n[-\s]+\n(.*?)\ntotal\s+(\d+)", text, re.DOTALL)
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table.group(1), re.MULTILINE)}


def test_paper_dry_run_plans_every_stage(dry_run):
    proc, seconds = dry_run
    counts = jobs_per_rule(proc.stdout)
    runs, data = len(PAPER["runs"]), PAPER["data"]
    # only the runs whose test accuracy Table 2 or a claim reads (Figures 9 and 10's: entropy loss, reference KL)
    evaluated = len(
        {
            r
            for a in ("table02_benchmarks", "fig09_entropy_loss", "fig10_reference_kl")
            for r in PAPER["artifacts"][a]["runs"]
        }
    )
    train_sets = {r.get("train_data", PAPER["models"][r["model"]]["train_data"]) for r in PAPER["runs"].values()}
    sources = len(
        {data["parts"][p]["source"] for s in train_sets for p in data["train_sets"][s]}
        | {data["parts"][b["part"]]["source"] for b in data["benchmarks"].values()}
    )
    assert counts == {
        "all": 1,
        "download_model": len(PAPER["models"]),
        "download_dataset": sources,
        "check_source": sources,
        "prepare_benchmark": len(data["benchmarks"]),
        "validation_set": 1,
        "prepare_train_set": len(train_sets),
        "preflight": runs,
        "preflight_power": 1,
        "train_verl": runs,
        "evaluate_vllm": evaluated,
        "preflight_eval": evaluated,
        "fit_run": runs,
        "fit_table": 1,
        "audit": 1,
        **{artifact: 1 for artifact in PAPER["artifacts"]},
        "power_sample_vllm": POWER_METHODS,
        **{
            artifact: 1
            for artifact in (
                "power01_accuracy",
                "power02_pass_at_k",
                "power03_likelihoods",
                "power04_hyperparameters",
                "power05_cost_accuracy",
            )
        },
        # each table's page in the report (figures.smk)
        **{
            f"{table}_page": 1
            for table in ("table01_covariance_distribution", "table02_benchmarks", "power01_accuracy")
        },
    }
    # The plan now runs verl's validation, reward loader and loss plugin on every run's command
    # (check_launches): its time is printed by the dry_run fixture, not asserted.


def test_every_gpu_job_waits_for_its_preflight_and_the_launches_were_checked_before_planning(dry_run):
    proc, _ = dry_run
    assert f"preflight: {len(PAPER['runs'])} run(s) to train composed and validated by verl" in proc.stderr
    blocks = re.findall(r"^rule (\w+):\n(.*?)(?=\n\n)", proc.stdout, re.DOTALL | re.MULTILINE)
    trains = [b for rule, b in blocks if rule == "train_verl"]
    assert len(trains) == len(PAPER["runs"])
    for block in trains:
        run = re.search(r"wildcards: run=(\S+)", block).group(1)
        assert f"results/preflight/{run}.txt" in block.split("output:")[0], block
    assert all(
        "results/preflight/power.txt" in b.split("output:")[0] for rule, b in blocks if rule == "power_sample_vllm"
    )


def test_a_run_that_verl_would_refuse_stops_the_plan_before_any_job(tmp_path):
    broken = yaml.safe_load((ROOT / "config.yaml").read_text())
    broken["paper"]["models"]["qwen2.5-0.5b"]["max_token_len_per_gpu"] = 8192  # under 2,048 + 8,192 tokens
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(broken))
    proc, _ = plan(tmp_path, "results/runs/qwen2.5-0.5b-grpo/metrics.parquet", env_extra={"HF_TOKEN": "x"})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "preflight: 1 of 1 run(s) would fail at launch" in out, out[-3000:]
    assert "qwen2.5-0.5b-grpo: actor.ppo_max_token_len_per_gpu 8192 is under" in out
    # nothing was made but the code stamps, which the plan writes as it reads the rules (PLAN.code)
    assert {p.name for p in (tmp_path / "results").iterdir()} == {"code"}


def test_gpu_hours_are_printed_before_anything_is_submitted(dry_run):
    proc, _ = dry_run
    m = re.search(
        r"GPU-hours estimate for (\d+) run\(s\) still to train: ([\d,]+) training \+ ([\d,]+) evaluation = ([\d,]+); "
        r"(\d+) power-sampling job\(s\): ([\d,]+)",
        proc.stderr,
    )
    assert m, proc.stderr[-2000:]
    assert int(m.group(1)) == len(PAPER["runs"]) and int(m.group(5)) == POWER_METHODS
    train, evaluation, total, power = (int(m.group(i).replace(",", "")) for i in (2, 3, 4, 6))
    assert train > 0 and evaluation > 0 and power > 0 and abs(train + evaluation - total) <= 1


def test_power_sampling_jobs_take_their_engines_gpus_for_their_estimated_time(dry_run):
    """One engine per method, on the model's tensor-parallel GPUs; Algorithm 1's redraws make power sampling the longest
    job, and more MCMC steps longer still; an RL method samples that run's final checkpoint."""
    proc, _ = dry_run
    blocks = re.findall(r"rule power_sample_vllm:.*?(?=\n\n)", proc.stdout, re.DOTALL)
    by_method = {re.search(r"wildcards: method=(\S+)", b).group(1): b for b in blocks}
    assert len(by_method) == POWER_METHODS
    gpus = PAPER["models"][POWER["model"]]["tensor_parallel"]  # the engine's GPUs (a size that divides the heads)
    resources = {m: job_resources(b) for m, b in by_method.items()}
    assert all(r["gpu"] == gpus for r in resources.values())
    runtime = {m: r["runtime"] for m, r in resources.items()}
    assert runtime["power"] > runtime["power-mcmc2"] > runtime["base"] == runtime["low-temp"]
    assert f"results/runs/{POWER['runs']['grpo']}/final" in by_method["grpo"]
    assert "results/runs/" not in by_method["power"].split("output:")[0]


def test_resources_scale_with_model_size(workdir):
    proc, _ = plan(
        workdir,
        "results/runs/qwen2.5-32b-grpo/metrics.parquet",
        "results/runs/qwen2.5-0.5b-grpo/metrics.parquet",
        "--forcerun",
        "train_verl",
        "--printshellcmds",
        "--verbose",
        env_extra={"HF_TOKEN": "x"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    blocks = re.findall(r"rule train_verl:.*?(?=\n\n)", proc.stdout, re.DOTALL)
    by_run = {re.search(r"wildcards: run=(\S+)", b).group(1): b for b in blocks}
    big, small = by_run["qwen2.5-32b-grpo"], by_run["qwen2.5-0.5b-grpo"]
    assert "nodes=4" in big and "gpu=32" in big and "nodes=1" in small and "gpu=8" in small
    runtime = lambda block: int(re.search(r"runtime=(\d+)", block).group(1))  # noqa: E731
    # every run asks for at most the site's longest job (config.yaml paper.launch.max_job_minutes, 48 h): a longer one
    # is trained by several jobs (paper.job_time)
    assert runtime(big) == 2880 >= runtime(small)


def test_a_gated_model_without_a_token_stops_the_plan_naming_what_to_set(workdir):
    proc, _ = plan(workdir, "all")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "is gated" in out and "HF_TOKEN" in out
    made = {p.name for p in (workdir / "results").iterdir()} if (workdir / "results").exists() else set()
    assert made <= {"code"} and not (workdir / ".snakemake" / "slurm_logs").exists()  # code stamps only (PLAN.code)


def test_every_rule_names_its_container_and_lint_is_clean(workdir):
    for scale in ("mini", "paper", "small"):
        cmd = [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(ROOT / "Snakefile"),
            "-d",
            str(workdir),
            "--config",
            f"scale={scale}",
            "--lint",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_TOKEN": "x"}, cwd=workdir)
        assert (
            proc.returncode == 0
            and "Congratulations, your workflow is in a good condition!" in proc.stdout + proc.stderr
        ), (scale, (proc.stdout + proc.stderr)[-3000:])


def sbatch_args(resources):
    """The sbatch command line snakemake-executor-plugin-slurm builds for a job with these resources,
    after the plugin's own check of slurm_extra (it refuses options it sets, --export among them)."""
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.validation import validate_slurm_extra

    class Resources(dict):
        __getattr__ = dict.get

    job = SimpleNamespace(resources=Resources(resources), threads=1)
    validate_slurm_extra(job)
    names = ("run_uuid", "slurm_logfile", "comment_str", "account", "partition", "workdir")
    return shlex.split(get_submit_command(job, dict.fromkeys(names, "x")))


def test_no_slurm_job_gets_the_token_and_no_plan_prints_it(workdir):
    profile = yaml.safe_load((ROOT / "slurm" / "config.yaml").read_text())
    assert profile["default-resources"]["slurm_extra"] == f"'{JOB_ENV_FLAG}'"
    assert resources.SLURM_JOB_ENV_FLAG == JOB_ENV_FLAG and JOB_ENV_FLAG.endswith(paths.SLURM_JOB_ENV)
    proc, _ = plan(workdir, "all", "--printshellcmds", "--verbose", env_extra=TOKENS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for secret in TOKENS.values():
        assert secret not in proc.stdout + proc.stderr
    blocks = re.findall(r"^rule (\w+):\n(.*?)(?=\n\n)", proc.stdout, re.DOTALL | re.MULTILINE)
    submitted = [(rule, job_resources(block)) for rule, block in blocks if rule not in LOCAL_RULES]
    assert {rule for rule, _ in submitted} >= {"train_verl", "evaluate_vllm", "fit_run", "audit"}
    for rule, asked in submitted:
        args = sbatch_args(asked)
        # sbatch applies --export-file after the plugin's hard-coded --export=ALL: the environment
        # submitted is the file's alone (tests/workflow/test_slurm_workflow.py shows it on a real cluster).
        assert args.index("--export=ALL") < args.index(JOB_ENV_FLAG), (rule, args)
        assert (rule == "train_verl") == ("--requeue" in args), (rule, args)


def test_jobs_parse_the_workflow_without_the_token(workdir):
    """SLURM jobs (--mode remote) and local subprocess jobs (--mode subprocess) parse the Snakefile
    again with no token while a gated download may still run: only the main process checks it."""
    gated = next(r for r, spec in PAPER["runs"].items() if PAPER["models"][spec["model"]].get("gated"))
    env = {k: v for k, v in os.environ.items() if k not in TOKENS}
    for mode in ("remote", "subprocess"):
        cmd = [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(ROOT / "Snakefile"),
            "-d",
            str(workdir),
            "--config",
            "scale=paper",
            "--mode",
            mode,
            "-n",
            f"results/runs/{gated}/metrics.parquet",
        ]
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, cwd=workdir)
        assert proc.returncode == 0 and "is gated" not in proc.stdout + proc.stderr, (mode, proc.stderr[-3000:])


def test_a_source_laid_out_otherwise_stops_before_preparation_and_keeps_the_download(tmp_path):
    """check_source runs for real on a downloaded snapshot whose files are not where the config reads them."""
    import pandas as pd

    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    source = tmp_path / "results" / "data" / "sources" / "olympiad"
    (source / "elsewhere").mkdir(parents=True)
    pd.DataFrame({"question": ["Find x."], "final_answer": [["3"]]}).to_parquet(source / "elsewhere" / "data.parquet")
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(tmp_path),
        "--config",
        "scale=paper",
        "--cores",
        "1",
        "results/preflight/sources/olympiad.txt",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_TOKEN": "x"}, cwd=tmp_path)
    log = (tmp_path / "results" / "logs" / "check_source" / "olympiad.log").read_text()
    assert proc.returncode != 0 and "part olympiad: no file under" in log and "elsewhere/data.parquet" in log, log
    assert (source / "elsewhere" / "data.parquet").exists() and not (
        tmp_path / "results" / "preflight" / "sources" / "olympiad.txt"
    ).exists()
