"""The paid-work guard's decision (pipeline.guard.paid_work_guard) and the causes it names (rerun_causes), on fake
jobs and a fake plan (tests/pipeline/fakes.py): which GPU jobs it stops for, and why it says they would run."""

import hashlib
import os

import pytest
from entropy_rl.pipeline import guard
from entropy_rl.pipeline.snakemake_api import WorkflowError
from fakes import Job, Reason, Workflow

HOURS = {"train:a": 100.0, "eval:a": 5.0, "power:p": 30.0, "train:b": 40.0}


def made(tmp_path, *names, mtime=1000.0):
    paths = []
    for name in names:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)
        os.utime(path, (mtime, mtime))
        paths.append(str(path))
    return paths


@pytest.fixture
def finished(tmp_path):
    """A finished training run (outputs exist) that Snakemake would run again."""
    return Job("train_verl", output=made(tmp_path, "runs/a/metrics.parquet"), run="a")


def test_a_finished_gpu_job_to_run_again_stops_the_workflow(finished):
    plan = Workflow([finished], reasons={finished: Reason(updated_input={"results/data/train.parquet"})})
    with pytest.raises(WorkflowError) as err:
        guard.paid_work_guard(plan, False, HOURS, {})
    text = str(err.value)
    assert "train_verl a: 100.0 GPU-hours" in text
    assert "input newer than its outputs: results/data/train.parquet" in text


def test_consent_force_touch_and_the_mini_scale_let_it_through(finished):
    plan = Workflow([finished])
    guard.paid_work_guard(plan, False, HOURS, {"rerun_paid": "all"})
    guard.paid_work_guard(plan, False, HOURS, {"rerun_paid": ["a"]})
    guard.paid_work_guard(Workflow([finished], reasons={finished: Reason(forced=True)}), False, HOURS, {})
    guard.paid_work_guard(Workflow([finished], touch=True), False, HOURS, {})
    guard.paid_work_guard(plan, True, HOURS, {})
    with pytest.raises(WorkflowError):
        guard.paid_work_guard(plan, False, HOURS, {"rerun_paid": ["b"]})  # consent for another run only


def test_jobs_without_outputs_and_cpu_jobs_are_not_paid_work(tmp_path, finished):
    new = Job("train_verl", output=[str(tmp_path / "runs/b/metrics.parquet")], run="b")
    cpu = Job("fit_run", output=made(tmp_path, "fits/a.json"), run="a")
    assert guard.outdated_paid_jobs(Workflow([new, cpu]), HOURS, None) == []
    outdated = guard.outdated_paid_jobs(Workflow([new, cpu, finished]), HOURS, None)
    assert [(j.rule, j.name, j.gpu_hours) for j in outdated] == [("train_verl", "a", 100.0)]


def test_each_gpu_rule_is_priced_by_its_own_hours(tmp_path):
    assert guard.job_gpu_hours(Job("train_verl", run="a"), HOURS) == 100.0
    assert guard.job_gpu_hours(Job("evaluate_vllm", run="a"), HOURS) == 5.0
    assert guard.job_gpu_hours(Job("power_sample_vllm", method="p"), HOURS) == 30.0
    sampled = Job("power_sample_vllm", output=made(tmp_path, "power/p.parquet"), method="p")
    assert guard.outdated_paid_jobs(Workflow([sampled]), HOURS, None)[0].name == "p"
    evaluated = Job("evaluate_vllm", output=made(tmp_path, "eval/a.parquet"), run="a")
    trained = Job("train_verl", output=made(tmp_path, "runs/a/metrics.parquet"), run="a")
    listed = guard.outdated_paid_jobs(Workflow([sampled, evaluated, trained]), HOURS, None)
    assert [j.rule for j in listed] == ["train_verl", "evaluate_vllm", "power_sample_vllm"]  # gpu_rules' order


def test_a_code_stamp_newer_than_the_outputs_is_a_cause_unless_its_checksum_is_recorded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (out,) = made(tmp_path, "out.parquet", mtime=1000.0)
    stamp = "results/code/train_verl.json"
    made(tmp_path, stamp, mtime=2000.0)
    job = Job("train_verl", output=[out], input=[stamp], run="a")
    monkeypatch.setattr(guard.paid_work, "code_causes", lambda f: [f"code changed: {f}"])
    assert guard.rerun_causes(Workflow([job]), job) == [f"code changed: {stamp}"]
    same = "sha256:" + hashlib.sha256(open(stamp, "rb").read()).hexdigest()
    plan = Workflow([job], checksums={(job, stamp): [same]}, reasons={job: Reason(text="reason: checksum")})
    assert guard.rerun_causes(plan, job) == ["reason: checksum"]  # Snakemake's own test spares it


def test_upstream_jobs_name_their_own_causes_and_a_gpu_one_is_only_named(tmp_path):
    (out,) = made(tmp_path, "out.parquet")
    job = Job("evaluate_vllm", output=[out], run="a")
    train = Job("train_verl", output=[str(tmp_path / "missing")], run="a")
    data = Job("prepare_benchmark", output=[str(tmp_path / "absent.parquet")], benchmark="x")
    plan = Workflow(
        [job, train, data],
        deps={job: {train: {"final"}, data: {"b.parquet", "a.parquet"}}},
        reasons={data: Reason(missing_output={"absent.parquet"})},
    )
    causes = guard.rerun_causes(plan, job)
    assert causes == [
        "input rebuilt first by train_verl a",
        "input rebuilt first by prepare_benchmark: a.parquet (outputs missing: absent.parquet)",
        "input rebuilt first by prepare_benchmark: b.parquet (outputs missing: absent.parquet)",
    ]
    assert guard.rerun_causes(Workflow([job, train], needrun=[job], deps={job: {train: {"final"}}}), job) == [
        "reason: unknown"
    ]


def test_params_script_inputs_and_container_changes_are_named(tmp_path):
    (out,) = made(tmp_path, "out.parquet", mtime=1000.0)
    (script,) = made(tmp_path, "scripts/train.py", mtime=2000.0)
    job = Job(
        "train_verl",
        output=[out],
        params={"spec": {"lr": 2e-6}, "gpus": 8},
        script="scripts/train.py",
        basedir=str(tmp_path),
        run="a",
    )
    reason = Reason(input_changed=True, software_stack_changed=True)
    plan = Workflow([job], reasons={job: reason}, params={out: [repr({"lr": 1e-6}), repr(8)]})
    assert guard.rerun_causes(plan, job) == [
        f"its script ({os.path.normpath(script)}) is newer than its outputs",
        "setting spec.lr: 1e-06 -> 2e-06",
        "its set of input files changed",
        "its container changed (img.sif)",
    ]
    unchanged = Workflow([job], params={out: [repr({"lr": 2e-6}), repr(8)]})
    assert not any("setting" in c for c in guard.rerun_causes(unchanged, job))
