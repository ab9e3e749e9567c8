"""Paid work is never redone silently: a complete set of paper-scale outputs, then a change.

The workflow is copied (times kept) so the tests can edit its code; every output of the paper-scale
DAG is created empty and made up to date with `snakemake --touch`, which also records each job's
metadata. Then `snakemake all` (not a dry run: the guard runs where jobs would be submitted) must
stop before any job when a GPU job would run again, name it, say what changed and price it; and a
change that leaves what the code computes as it was (a comment, a module moved) must make nothing
outdated.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from entropy_rl.core import modules
from support import ROOT, assert_stamps_uncached, code_stamps, make_planned_outputs, stamp_records

pytestmark = pytest.mark.costly  # about two minutes of a core: scheduled first (tests/conftest.py)

ENV = {"HF_TOKEN": "hf_test_token_not_real"}


def snakemake(wf, work, *args):
    env = {**os.environ, **ENV, "PYTHONPATH": str(wf / "workflow")}  # the copy's package, not the checkout's
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(wf / "Snakefile"),
        "-d",
        str(work),
        "--config",
        "scale=paper",
        *args,
    ]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=900)


def copy_workflow(wf):
    """The workflow's files copied to ``wf``, times kept."""
    for name in ("Snakefile", "claims.yaml", "containers", "envs", "workflow"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(
                src, wf / name, copy_function=shutil.copy2, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
            )
        else:
            shutil.copy2(src, wf / name)


def metrics_of_every_run(work):
    """Each paper run's metrics table, empty: so the plan runs no launch preflight."""
    for run in yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]["runs"]:
        (work / "results" / "runs" / run).mkdir(parents=True)
        (work / "results" / "runs" / run / "metrics.parquet").touch()


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A copy of the workflow and a work directory holding every output of its paper-scale DAG, up to date."""
    wf, work = tmp_path_factory.mktemp("workflow"), tmp_path_factory.mktemp("paper-results")
    copy_workflow(wf)
    shutil.copy2(ROOT / "config.yaml", work / "config.yaml")
    metrics_of_every_run(work)
    plan = snakemake(wf, work, "-n", "all")
    assert plan.returncode == 0, plan.stderr[-3000:]
    make_planned_outputs(plan.stdout, work)
    # --forceall: every job's metadata recorded (parameters, input checksums), as a real run leaves it
    touched = snakemake(wf, work, "--touch", "--forceall", "--cores", "2", "all")
    assert touched.returncode == 0 and "not touched" not in touched.stderr, touched.stderr[-3000:]
    return wf, work


def run_all(study, *config):
    """`snakemake all` for real: the guard runs where jobs would be submitted (a dry run never submits)."""
    wf, work = study
    return snakemake(wf, work, *config, "--cores", "1", "all")


def edited(path, old, new):
    """Replace ``old`` by ``new`` in ``path`` (once, and it must be there); returns the undo."""
    text = path.read_text()
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new))
    return lambda: path.write_text(text)


def test_an_up_to_date_result_set_runs_nothing(study):
    proc = run_all(study)
    assert proc.returncode == 0 and "Nothing to be done" in proc.stderr, proc.stderr[-3000:]


def test_an_edit_rewrites_exactly_the_stamps_of_the_code_that_runs_it(study, monkeypatch):
    """The paper plan's stamps, written through the template cache (.snakemake/behaviour-templates), are those of a
    fresh parse; an edit of the reward rewrites every stamp whose code imports it and no other, each naming it, and
    undone it restores every stamp's text."""
    wf, work = study
    assert snakemake(wf, work, "-n", "all").returncode == 0  # the stamps of the code as it is (an earlier test edits)
    before = code_stamps(work)
    records = stamp_records(work)
    assert len(records) >= 30 and (work / ".snakemake" / "behaviour-templates").is_dir(), sorted(before)
    assert_stamps_uncached(work, wf / "workflow" / "entropy_rl", monkeypatch)
    reward = "entropy_rl.core.reward"
    running = {name for name, record in records.items() if reward in record["modules"]}
    assert {"evaluate_vllm.json", "preflight.json"} <= running < set(records), sorted(running)
    undo = edited(
        wf / "workflow" / "entropy_rl" / "core" / "reward.py", "TEST_TIMEOUT_S = 10.0", "TEST_TIMEOUT_S = 12.0"
    )
    try:
        plan = snakemake(wf, work, "-n", "all")
        assert plan.returncode == 0, plan.stderr[-3000:]
        after = code_stamps(work)
        assert {name for name in records if after[name] != before[name]} == running
        monkeypatch.setattr(modules, "PACKAGE_DIR", wf / "workflow" / "entropy_rl")
        modules.clear_caches()
        assert all(modules.changed_modules(work / "results" / "code" / name) == [reward] for name in running)
    finally:
        undo()
        modules.clear_caches()
    assert snakemake(wf, work, "-n", "all").returncode == 0
    again = code_stamps(work)
    kept = [*records, *(name.replace(".json", ".modules.json") for name in records)]  # not the replaced records
    assert {name: again[name] for name in kept} == {name: before[name] for name in kept}


def test_a_comment_a_docstring_and_a_moved_module_make_nothing_outdated(study):
    pkg = study[0] / "workflow" / "entropy_rl"
    undo = []
    try:
        undo.append(
            edited(pkg / "core" / "reward.py", "TEST_TIMEOUT_S = 10.0", "TEST_TIMEOUT_S = 10.0  # seconds per test run")
        )
        # paper/prompt_format.py moved to core/ (where it was before issue 31), its importers updated: the same behaviour.
        shutil.move(pkg / "paper" / "prompt_format.py", pkg / "core" / "prompt_format.py")
        undo.append(lambda: shutil.move(pkg / "core" / "prompt_format.py", pkg / "paper" / "prompt_format.py"))
        for importer in ("run_command", "evaluate", "power_sampling", "power_samplers", "preflight"):
            path = pkg / "paper" / f"{importer}.py"
            undo.append(edited(path, "from . import prompt_format\n", "from ..core import prompt_format\n"))
        proc = run_all(study)
        assert proc.returncode == 0 and "Nothing to be done" in proc.stderr, proc.stderr[-3000:]
    finally:
        for step in reversed(undo):
            step()


def test_an_edit_of_a_later_sampler_outdates_its_jobs_and_none_of_the_first_ones(study):
    """Power-SMC's resampling changed: its job and scalable power sampling's (one module samples both) are named and
    priced; plain sampling's and Algorithm 1's, sampled by another module, are not outdated."""
    wf, _ = study
    undo = edited(wf / "workflow" / "entropy_rl" / "core" / "power" / "smc.py", 'side="right")', 'side="left")')
    try:
        proc = run_all(study)
        message = proc.stderr[proc.stderr.find("paid work:") :]
        assert proc.returncode != 0 and "Nothing was submitted" in message, proc.stderr[-3000:]
        jobs = re.findall(r"^  (\w+) (\S+): [\d,.]+ GPU-hours$", message, re.MULTILINE)
        assert sorted(jobs) == [("power_sample_vllm", "smc"), ("power_sample_vllm", "sps")], message[:3000]
        assert re.search(r"^      code changed: entropy_rl\.core\.power\.smc$", message, re.MULTILINE), message[:3000]
    finally:
        undo()


def test_an_edit_of_the_reward_stops_before_submitting_names_and_prices_every_job(study):
    wf, work = study
    undo = edited(
        wf / "workflow" / "entropy_rl" / "core" / "reward.py", "TEST_TIMEOUT_S = 10.0", "TEST_TIMEOUT_S = 12.0"
    )
    try:
        proc = run_all(study)
        print(proc.stderr[proc.stderr.find("paid work:") :][:4000])
        assert proc.returncode != 0
        message = proc.stderr[proc.stderr.find("paid work:") :]
        assert "Nothing was submitted" in message and "Execute" not in proc.stderr
        paper = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
        trained = re.findall(r"^  train_verl (\S+): ([\d,.]+) GPU-hours$", message, re.MULTILINE)
        # The reward shapes every run: both trainers run it (launch.TRAINER_MODULES).
        assert {run for run, _ in trained} == set(paper["runs"])
        assert re.search(r"^      code changed: entropy_rl\.core\.reward$", message, re.MULTILINE)
        # evaluations grade with it too; the power samples are graded by it
        assert re.search(r"^  evaluate_vllm \S+: [\d,.]+ GPU-hours$", message, re.MULTILINE)
        total = float(re.search(r"costs ([\d,]+) GPU-hours", message).group(1).replace(",", ""))
        listed = sum(
            float(h.replace(",", "")) for h in re.findall(r"^  \w+ \S+: ([\d,.]+) GPU-hours$", message, re.MULTILINE)
        )
        assert abs(total - listed) <= 1 + 0.001 * total
        # The outputs are untouched: nothing was submitted, nothing deleted.
        assert all((work / "results" / "runs" / run / "final").is_dir() for run in paper["runs"])
    finally:
        undo()


PRIME_RUN = "qwen2.5-7b-prime"


def refused(proc):
    """The GPU jobs the guard stopped for, as (rule, name), and its message."""
    message = proc.stderr[proc.stderr.find("paid work:") :]
    assert proc.returncode != 0 and "Nothing was submitted" in message, proc.stderr[-3000:]
    return re.findall(r"^  (\w+) (\S+): [\d,.]+ GPU-hours$", message, re.MULTILINE), message


def test_an_edit_of_the_loss_plugin_outdates_the_verl_runs_and_not_prime(study):
    """PRIME's trainer (prime_main, on verl 0.4.1) never loads the plugin: its run is not outdated by an edit of it,
    and neither is its preflight (whose code is every trainer's)."""
    plugin = study[0] / "workflow" / "entropy_rl" / "paper" / "verl_plugin.py"
    undo = edited(plugin, 'SUFFIX = "+cov"', 'SUFFIX = "+cov2"')
    try:
        jobs, message = refused(run_all(study))
        runs = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]["runs"]
        verl_runs = {run for run, spec in runs.items() if spec["algorithm"] != "prime"}
        assert {name for rule, name in jobs if rule == "train_verl"} == verl_runs, message[:3000]
        assert PRIME_RUN not in {name for _, name in jobs}, message[:3000]
        assert re.search(r"^      code changed: entropy_rl\.paper\.verl_plugin$", message, re.MULTILINE)
    finally:
        undo()


def test_an_edit_of_prime_main_outdates_only_the_prime_run(study):
    """The PRIME run's training and the evaluation of what it trains; no verl 0.9.1 run."""
    prime_main = study[0] / "workflow" / "entropy_rl" / "paper" / "prime_main.py"
    undo = edited(prime_main, "version_base=None)(run)", 'version_base="1.3")(run)')
    try:
        jobs, message = refused(run_all(study))
        assert ("train_verl", PRIME_RUN) in jobs and {name for _, name in jobs} == {PRIME_RUN}, message[:3000]
        assert re.search(r"^      code changed: entropy_rl\.paper\.prime_main$", message, re.MULTILINE)
    finally:
        undo()


def test_a_change_of_the_preflight_alone_outdates_no_training_run(study):
    """The preflight's own code changed (it feeds fewer rows of a training set through verl's dataset): no preflight
    reruns, so no GPU job after one is outdated (preflight.smk says why a rerun with the same verdict would be)."""
    wf, work = study
    stamp = work / "results" / "code" / "preflight.json"
    before = stamp.read_text()
    undo = edited(
        wf / "workflow" / "entropy_rl" / "paper" / "verl" / "checks.py",
        "DATASET_SAMPLE_ROWS = 64",
        "DATASET_SAMPLE_ROWS = 32",
    )
    try:
        proc = run_all(study)
        assert proc.returncode == 0 and "Nothing to be done" in proc.stderr, proc.stderr[-3000:]
        assert stamp.read_text() != before  # the change was seen
    finally:
        undo()


def outdated_gpu_jobs(proc) -> set[tuple[str, str]]:
    """The guard's list of outdated GPU jobs, (rule, run or method)."""
    message = proc.stderr[proc.stderr.find("paid work:") :]
    return set(re.findall(r"^  (\w+) (\S+): [\d,.]+ GPU-hours$", message, re.MULTILINE))


def test_an_evaluation_setting_outdates_the_evaluations_and_no_training_run(study):
    """eval.max_new_tokens is the evaluation's engine's (its preflight_eval's) and no training job's: the preflight of
    a run checks only the engines its training starts, from the values the training job itself runs with."""
    _wf, work = study
    undo = edited(
        work / "config.yaml", "eval: {seed: 0, max_new_tokens: 8192,", "eval: {seed: 0, max_new_tokens: 4096,"
    )
    try:
        plan = snakemake(study[0], work, "-n", "all")
        ran = dict(re.findall(r"^(\w+)\s+(\d+)$", plan.stdout.split("Job stats:")[1].split("Reasons")[0], re.MULTILINE))
        assert "train_verl" not in ran and "preflight" not in ran and "power_sample_vllm" not in ran, ran
        assert ran["preflight_eval"] == ran["evaluate_vllm"], ran
        proc = run_all(study)
        assert proc.returncode != 0 and {rule for rule, _ in outdated_gpu_jobs(proc)} == {"evaluate_vllm"}
    finally:
        undo()


def test_a_default_that_only_one_run_reads_outdates_that_run_alone(study):
    """train.prime.beta is read by the PRIME run only: no other run's preflight sees it, so no other run is outdated."""
    _wf, work = study
    undo = edited(work / "config.yaml", "prime: {beta: 0.05, lr: 1.0e-6,", "prime: {beta: 0.06, lr: 1.0e-6,")
    try:
        proc = run_all(study)
        assert proc.returncode != 0, proc.stderr[-3000:]
        assert {run for rule, run in outdated_gpu_jobs(proc) if rule == "train_verl"} == {PRIME_RUN}, proc.stderr[
            -3000:
        ]
    finally:
        undo()


def test_a_run_trained_again_has_its_launch_checked_with_the_new_code(study):
    """Its preflight does not rerun for a change of code alone, so the launch part of it runs before submission
    (pipeline.estimate.check_retrained_launches): a plugin that no longer registers the run's loss stops the workflow."""
    wf, work = study
    run = "qwen2.5-7b-grpo-ent0.01"
    plugin = wf / "workflow" / "entropy_rl" / "paper" / "verl_plugin.py"
    undo = edited(plugin, 'SUFFIX = "+cov"', 'SUFFIX = "+cov2"')
    try:
        proc = snakemake(wf, work, f"rerun_paid=[{run}]", "--cores", "1", f"results/runs/{run}/metrics.parquet")
        assert proc.returncode != 0 and "paid work" not in proc.stderr, proc.stderr[-3000:]
        assert "preflight: 1 of 1 run(s) would fail at launch; nothing was submitted" in proc.stderr, proc.stderr[
            -3000:
        ]
        assert f"  {run}: loss " in proc.stderr, proc.stderr[-3000:]
        assert not re.search(r"^(local)?rule \w+:", proc.stderr, re.MULTILINE)  # no job ran, the preflight neither
    finally:
        undo()


def test_a_setting_names_the_run_and_the_setting(study):
    _wf, work = study
    run = "qwen2.5-7b-grpo-ent0.01"
    undo = edited(
        work / "config.yaml", "entropy_loss_0.01: {entropy_coeff: 0.01}", "entropy_loss_0.01: {entropy_coeff: 0.02}"
    )
    try:
        proc = run_all(study)
        message = proc.stderr[proc.stderr.find("paid work:") :]
        print(message[:3000])
        assert proc.returncode != 0, proc.stderr[-3000:]
        assert re.search(rf"^  train_verl {re.escape(run)}: [\d,.]+ GPU-hours$", message, re.MULTILINE), message[:3000]
        assert "setting spec.loss.entropy_coeff: 0.01 -> 0.02" in message
        # only the run whose setting changed, and its evaluation (rebuilt from the retrained policy)
        assert set(re.findall(r"^  \w+ (\S+): ", message, re.MULTILINE)) == {run}
    finally:
        undo()


def test_consent_lets_the_named_jobs_run(study):
    """An evaluation setting outdates every evaluation; named (here: all), the guard lets them through, and the first
    evaluation job starts (and fails here at once: this environment has no vLLM)."""
    _wf, work = study
    undo = edited(
        work / "config.yaml", "eval: {seed: 0, max_new_tokens: 8192,", "eval: {seed: 1, max_new_tokens: 8192,"
    )
    try:
        refused = run_all(study)
        assert refused.returncode != 0 and "setting seed: 0 -> 1" in refused.stderr, refused.stderr[-3000:]
        assert "rule evaluate_vllm:" not in refused.stderr
        allowed = run_all(study, "rerun_paid=all")
        assert "paid work" not in allowed.stderr and "rule evaluate_vllm:" in allowed.stderr, allowed.stderr[-3000:]
    finally:
        undo()


# The SLURM profile's container method; benchmarks/apptainer_chroot answers Snakemake's `apptainer --version` (no job
# runs in an image here).
APPTAINER = ("--software-deployment-method", "apptainer")
APPTAINER_PATH = f"{ROOT / 'benchmarks' / 'apptainer_chroot'}:{os.environ['PATH']}"
# A job of each GPU rule, in each of the three GPU images: train (verl 0.9.1), prime, eval.
IMAGE_TARGETS = (
    "results/runs/qwen2.5-7b-grpo/final",
    f"results/runs/{PRIME_RUN}/final",
    "results/eval/qwen2.5-7b-grpo/summary.parquet",
    "results/power/samples/base.parquet",
)


def test_a_checkout_moved_with_its_results_keeps_them_and_an_image_edit_still_outdates_its_jobs(tmp_path, monkeypatch):
    """Run as the SLURM profile runs it (from the checkout, in its rules' images): Snakemake records each job's image
    reference and reruns a job whose reference changed. Moved elsewhere, or mounted under another path on a node,
    the checkout and its results stay up to date; a real change of an image (its %post) still outdates exactly the
    jobs that run in it, and the guard stops for them."""
    monkeypatch.setitem(ENV, "PATH", APPTAINER_PATH)
    here = tmp_path / "here" / "entropy-rl"
    here.mkdir(parents=True)
    copy_workflow(here)
    shutil.copy2(ROOT / "config.yaml", here / "config.yaml")
    metrics_of_every_run(here)
    plan = snakemake(here, here, *APPTAINER, "-n", *IMAGE_TARGETS)
    assert plan.returncode == 0, plan.stderr[-3000:]
    make_planned_outputs(plan.stdout, here)
    touched = snakemake(here, here, *APPTAINER, "--touch", "--forceall", "--cores", "2", *IMAGE_TARGETS)
    assert touched.returncode == 0 and "not touched" not in touched.stderr, touched.stderr[-3000:]

    there = tmp_path / "elsewhere" / "entropy-rl"
    there.parent.mkdir()
    here.rename(there)  # as `mv`: the files' times kept
    kept = snakemake(there, there, *APPTAINER, "--cores", "1", *IMAGE_TARGETS)
    assert kept.returncode == 0 and "Nothing to be done" in kept.stderr, kept.stderr[-3000:]

    undo = edited(there / "containers" / "train.def", "%post\n", "%post\n    echo an edit of the image\n")
    try:
        jobs, message = refused(snakemake(there, there, *APPTAINER, "--cores", "1", *IMAGE_TARGETS))
        assert jobs == [("train_verl", "qwen2.5-7b-grpo"), ("evaluate_vllm", "qwen2.5-7b-grpo")], message[:3000]
        assert "its container changed (containers/images/train-" in message, message[:3000]
    finally:
        undo()
