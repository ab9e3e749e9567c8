"""The GPU pilot: planned through the SLURM profile (its jobs, their resources and order, the GPU-hours it states),
and its report built by the workflow's own rule from what a real pilot writes (tests/fixtures/pilot)."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from support import FIXTURES, ROOT, job_resources, make_planned_outputs, plan, speed_result

pytestmark = pytest.mark.costly  # a minute of a core: scheduled first (tests/conftest.py)

TOKEN = {"HF_TOKEN": "hf_test_token_not_real"}
PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
RUN = "pilot-grpo"
METHODS = ["pilot-plain", "pilot-power", "pilot-smc", "pilot-sps", "pilot-rl"]


@pytest.fixture(scope="module")
def pilot_plan(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("pilot")
    shutil.copy(ROOT / "config.yaml", workdir / "config.yaml")
    proc, _ = plan(workdir, "--verbose", "pilot", env_extra=TOKEN)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    return workdir, proc


def test_the_pilot_runs_every_gpu_rule_once_through_the_studys_rules(pilot_plan):
    _, proc = pilot_plan
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", proc.stdout.split("Job stats:")[1].split("Reasons")[0], re.MULTILINE))
    gpu_and_gates = (
        "train_verl",
        "evaluate_vllm",
        "power_sample_vllm",
        "preflight",
        "preflight_eval",
        "preflight_power",
        "download_model",
        "pilot_report",
        "pilot_speed",
        "fit_run",
        "audit",
    )
    expected = {
        "download_model": 1,
        "preflight": 1,
        "preflight_eval": 1,
        "train_verl": 1,
        "evaluate_vllm": 1,
        "power_sample_vllm": 5,
        "pilot_report": 1,
        "pilot_speed": 1,
    }
    assert {k: int(v) for k, v in counts.items() if k in gpu_and_gates} == expected
    assert int(counts["pilot_benchmark"]) == len(PAPER["data"]["benchmarks"])  # a slice of every benchmark


def test_each_gpu_job_asks_slurm_for_one_gpu_for_its_estimated_time(pilot_plan):
    _, proc = pilot_plan
    blocks = re.split(r"\n(?=\[.*\d{4}\]\n)", proc.stdout)
    gpu_jobs = [
        b
        for b in blocks
        if re.search(r"^rule (train_verl|evaluate_vllm|power_sample_vllm|pilot_speed):", b, re.MULTILINE)
    ]
    assert len(gpu_jobs) == 8
    for block in gpu_jobs:
        res = job_resources(block)
        assert res.get("gpu") == 1, block
        floor = 30 if "rule pilot_speed:" in block else 60  # the speed job's floor is its own (resources.py)
        assert floor <= res["runtime"] <= 120, block  # the floor up to twice 60 min: minutes of work, not hours
    train = next(b for b in gpu_jobs if "rule train_verl:" in b)
    assert job_resources(train)["nodes"] == 1 and "--requeue" in job_resources(train)["slurm_extra"]


def test_the_plan_states_the_pilots_gpu_hours_before_submission(pilot_plan):
    _, proc = pilot_plan
    stated = re.search(r"GPU pilot: 8 GPU jobs on 1 GPU\(s\) each at most, ([\d.]+) GPU-hours", proc.stderr)
    assert stated, proc.stderr[-3000:]
    listed = [
        float(h)
        for h in re.findall(r"^  (?:train|eval|power|speed):pilot\S*: ([\d.]+) GPU-hours$", proc.stderr, re.MULTILINE)
    ]
    assert len(listed) == 8 and abs(sum(listed) - float(stated.group(1))) < 0.02
    assert 1.0 <= float(stated.group(1)) <= 2.5  # about two GPU-hours, the speed job's four sizes about one of them
    assert "preflight: 1 run(s) to train composed and validated by verl" in proc.stderr  # the pilot's own command


def test_the_pilots_jobs_run_in_the_studys_order(pilot_plan):
    workdir, _ = pilot_plan
    proc, _ = plan(workdir, "--dag", "dot", "pilot", env_extra=TOKEN)
    labels = dict(re.findall(r'^\s*(\d+)\[label = "(\w+)', proc.stdout, re.MULTILINE))
    edges = {(labels[a], labels[b]) for a, b in re.findall(r"^\s*(\d+) -> (\d+)$", proc.stdout, re.MULTILINE)}
    for edge in [
        ("download_model", "preflight"),
        ("preflight", "train_verl"),
        ("train_verl", "evaluate_vllm"),
        ("download_model", "preflight_eval"),
        ("preflight_eval", "evaluate_vllm"),
        ("pilot_benchmark", "evaluate_vllm"),
        ("train_verl", "power_sample_vllm"),
        ("preflight_eval", "power_sample_vllm"),  # the pilot run's evaluation preflight, not its training's
        ("evaluate_vllm", "pilot_report"),
        ("power_sample_vllm", "pilot_report"),
        ("train_verl", "pilot_report"),
    ]:
        assert edge in edges, edge
    assert "preflight_power" not in labels.values()  # the pilot downloads no other model


def snakemake(workdir, *args):
    env = {**os.environ, **TOKEN}
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
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)


def test_the_report_rule_reads_what_a_real_pilot_writes_and_the_estimate_then_uses_it(tmp_path):
    """Every pilot output made up to date (--touch), then the logs a pilot writes (the fixture) in place: the report
    rule runs for real on them, and the next plan's GPU-hours estimate says it uses the MFUs the pilot measured."""
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    planned = snakemake(tmp_path, "-n", "pilot")
    assert planned.returncode == 0, planned.stderr[-3000:]
    make_planned_outputs(planned.stdout, tmp_path)
    assert snakemake(tmp_path, "--touch", "--cores", "2", "pilot").returncode == 0
    shutil.copytree(FIXTURES / "pilot" / "logs", tmp_path / "results" / "logs", dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "pilot" / "runs", tmp_path / "results" / "runs", dirs_exist_ok=True)
    # The fixture has the GPU jobs' logs only, and of the samplers those of plain, Algorithm 1 and the RL checkpoint.
    for name in (
        "download_model/qwen2.5-0.5b",
        f"preflight/{RUN}",
        f"preflight/eval/{RUN}",
        "power/pilot-smc",
        "power/pilot-sps",
        "pilot_speed",
    ):
        log = tmp_path / "results" / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("2026-11-25 09:00:00,000 entropy_rl INFO start\n2026-11-25 09:00:40,000 entropy_rl INFO done\n")
    # The speed job's output as paper.cost.speed.measure writes it: 0.5B and 1.5B timed, 7B skipped (tests/paper/cost/test_speed.py)
    shutil.copy(speed_result(tmp_path), tmp_path / "results" / "pilot" / "speed.json")
    made = snakemake(tmp_path, "--cores", "1", "pilot", "--forcerun", "pilot_report")
    assert made.returncode == 0, made.stderr[-3000:]
    report = (tmp_path / "results" / "pilot" / "report.md").read_text()
    for stage in (
        "download_model",
        "preflight",
        "preflight_eval",
        "train_verl",
        "evaluate_vllm",
        "power_sample_vllm",
        "pilot_speed",
    ):
        assert stage in report
    assert "failed" not in report.lower().replace("failed: 0", "").replace("failed: exit 1 after 30 s", "")
    estimate = json.loads((tmp_path / "results" / "pilot" / "estimate.json").read_text())
    assert estimate["pilot_stages"] == "11/11"
    assert estimate["sources"]["train_mfu"]["source"] == "measured by size"
    # Timed on an H200, the config's budget prices A100s: the next plan refuses the pilot's speeds, and says why
    run = "qwen2.5-0.5b-grpo"
    refused = snakemake(tmp_path, "-n", f"results/runs/{run}/metrics.parquet")
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "gpu_conversion.H200" in said and "Traceback" not in said, said[-3000:]
    # With a stated conversion, the next plan's estimate uses each architecture's MFU by the speed laws, and says so.
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    config["paper"]["budget"]["gpu_conversion"] = {"H200": {"factor": 2.5, "source": "a test's"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    again = snakemake(tmp_path, "-n", f"results/runs/{run}/metrics.parquet")
    assert "measured on this cluster (results/pilot/estimate.json)" in again.stderr, again.stderr[-3000:]
    assert (
        "each architecture's FLOPs at its MFU by the pilot's speed laws, of A100's 312 TFLOPS per GPU" in again.stderr
    )
    line = re.search(r"GPU-hours estimate for 1 run\(s\) still to train: ([\d,]+) training", again.stderr).group(1)
    assert float(line.replace(",", "")) > 0
    # claims_budget prices every claim with them, says so, and sets the budget's whole-step MFU beside published runs
    budget_made = snakemake(tmp_path, "--cores", "1", "claims_budget")
    assert budget_made.returncode == 0, budget_made.stderr[-3000:]
    claims = (tmp_path / "results" / "budget" / "claims.md").read_text()
    assert "by the GPU pilot's speed laws (results/pilot/estimate.json)" in claims
    assert "## The assumed MFUs beside published runs" in claims and "Qwen3-32B on 32 H100" in claims
