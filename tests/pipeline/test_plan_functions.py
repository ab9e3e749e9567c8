"""The rest of what the rule files compute (pipeline.power, params, claims, resources, estimate, pilot, cluster),
on small dict configs and on the paper scale as the study plan resolves it (pipeline.plan)."""

import dataclasses
import json
import os
import types

import pytest
import yaml
from entropy_rl.core import paths
from entropy_rl.core.scale import Model, Placement, Shape, build
from entropy_rl.paper.cost import architectures, budget
from entropy_rl.pipeline import claims, cluster, estimate, params, pilot, power, resources, scope
from entropy_rl.pipeline import plan as study_plan
from entropy_rl.pipeline.snakemake_api import WorkflowError
from fakes import Job, Workflow
from support import ROOT

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
PAPER = scope.resolve({**CONFIG, "scale": "paper"})
MINI = scope.resolve({**CONFIG, "scale": "mini"})
PAPER_PLAN = study_plan.build({**CONFIG, "scale": "paper"}, Workflow(basedir=ROOT))


def plan_of(config: dict, **workflow) -> study_plan.StudyPlan:
    return study_plan.build(config, Workflow(basedir=ROOT, **workflow))


# ---- power ----------------------------------------------------------------------------------------


def test_the_pilots_sampling_jobs_run_on_its_model_and_its_rl_checkpoint():
    jobs = power.pilot_methods(PAPER.scale, PAPER.pilot, PAPER.pilot_runs)
    run = PAPER.pilot_runs[0]
    assert list(jobs)[:2] == ["pilot-plain", "pilot-power"] and list(jobs)[-1] == "pilot-rl"
    assert {j["model"] for j in jobs.values()} == {PAPER.scale.runs[run].model}
    assert jobs["pilot-rl"]["settings"] == {"kind": "sample", "temperature": 1.0, "run": run}
    assert jobs["pilot-power"]["settings"]["kind"] == "power"
    assert power.pilot_methods(MINI.scale, None, []) == {}


def test_a_sampling_job_is_the_pilots_or_the_studys():
    study = power.study(PAPER.scale, PAPER.replicates, PAPER.seed)
    pilots = power.pilot_methods(PAPER.scale, PAPER.pilot, PAPER.pilot_runs)
    assert power.job(PAPER.scale, study, pilots, "pilot-plain") is pilots["pilot-plain"]
    method = next(iter(study.methods))
    job = power.job(PAPER.scale, study, pilots, method)
    assert job["settings"] == study.methods[method] and job["n"] == PAPER.power["n"]
    assert power.methods(None) == {} and power.study(dataclasses.replace(MINI.scale, config={}), 1, 0) is None
    assert power.benchmarks(PAPER.scale, {}) == PAPER.power["benchmarks"]
    assert power.benchmarks(PAPER.scale, {"benchmarks": ["amc"]}) == ["amc"]


# ---- params ---------------------------------------------------------------------------------------


def test_small_params():
    lock = PAPER.scale.config["hub"]["lock"]
    assert params.lock_file(PAPER.scale, "org/model") == os.path.join(lock, "org--model.yaml")
    assert params.protocols(MINI.scale, ["add5", "add1"]) == {  # as the config writes them, keys sorted
        "add1": {"n": 1, "temperature": 0.0},
        "add5": {"n": 8, "temperature": 0.6},
    }
    assert params.report_labels("table02_benchmarks") == {params.REPORT_LABEL: "table02_benchmarks · Table 2"}
    scope_ = params.preflight_power_scope(PAPER.scale)
    assert scope_["runs"] == {} and list(scope_["models"]) == [PAPER.power["model"]]


def test_an_artifact_reads_only_what_it_registered():
    name = "fig01_entropy_collapse"
    inputs = params.artifact_inputs(PAPER_PLAN, name)
    runs = scope.with_replicates(PAPER.scale, scope.artifact_runs(PAPER.scale, name))
    assert inputs["code"] == paths.CODE_STAMP.format(key=name)
    assert inputs["metrics"] == [paths.RUN_METRICS.format(run=r) for r in runs] and "summaries" not in inputs
    p = params.artifact_params(PAPER_PLAN, name)
    assert p["runs"] == scope.artifact_runs(PAPER.scale, name) and set(p["labels"]) == set(p["runs"])


def test_the_audits_params_list_the_claims_not_run_only_when_chosen():
    chosen = plan_of({**CONFIG, "scale": "paper", "claims": ["law/*"]})
    p = params.audit_params(chosen)
    assert p["not_run"] and all(not c.startswith("law/") for c in p["not_run"]) and p["scale"] == "paper"
    assert p["runs"] == chosen.study_runs and set(p["runs"]) < set(PAPER.runs)
    assert p["not_run"] == {c: round(h, 1) for c, h in chosen.not_run.items()}
    assert params.audit_params(PAPER_PLAN)["not_run"] == {}
    assert p["power"]["model"] == PAPER.power["model"]


# ---- claims ---------------------------------------------------------------------------------------


def test_the_budget_is_config_yamls_or_the_pilots_measured_mfus(tmp_path, capsys):
    budget = {"gpu": "A100", "gpu_peak_tflops": 312, "train_mfu": 0.3, "rollout_mfu": 0.05, "walltime_margin": 1.5}
    scale = dataclasses.replace(PAPER.scale, config={**PAPER.scale.config, "budget": budget})
    S = scale.config
    estimate_file = tmp_path / "estimate.json"
    assert claims.budget_assumptions(scale, True, str(estimate_file)) is S["budget"]
    assert claims.budget_source(scale, S["budget"], "e.json").endswith("config.yaml paper.budget, assumed, A100 hours")
    on_a100 = {"gpu": "A100", "gpu_peak_tflops": 312}
    estimate_file.write_text(json.dumps({"train_mfu": 0.2, "rollout_mfu": 0.1, **on_a100}))
    measured = claims.budget_assumptions(scale, True, str(estimate_file))
    assert measured == {**S["budget"], "train_mfu": 0.2, "rollout_mfu": 0.1}
    assert "measured at its one model size" in claims.budget_source(scale, measured, "e.json")
    assert claims.budget_assumptions(scale, False, str(estimate_file)) is S["budget"]  # on a CPU: never measured
    estimate_file.write_text(json.dumps({"train_mfu": 0.2, "rollout_mfu": 0.1, "speed_laws": {"a": 1}, **on_a100}))
    laws = claims.budget_assumptions(scale, True, str(estimate_file))
    assert laws["speed_laws"] == {"a": 1} and "speed laws" in claims.budget_source(scale, laws, "e.json")
    # timed on an H200: refused under an A100 budget, unless a conversion is stated (2 A100 seconds an H200 second)
    estimate_file.write_text(json.dumps({"train_mfu": 0.2, "rollout_mfu": 0.1, "gpu": "H200", "gpu_peak_tflops": 989}))
    with pytest.raises(WorkflowError, match="gpu_conversion.H200"):
        claims.budget_assumptions(scale, True, str(estimate_file))
    S["budget"]["gpu_conversion"] = {"H200": {"factor": 2.0, "source": "a test"}}
    converted = claims.budget_assumptions(scale, True, str(estimate_file))
    assert (converted["train_mfu"], converted["rollout_mfu"]) == (
        pytest.approx(0.2 * 989 / 624),
        pytest.approx(0.1 * 989 / 624),
    )
    estimate_file.write_text("{}")
    assert claims.budget_assumptions(scale, True, str(estimate_file)) is S["budget"]
    assert "unreadable" in capsys.readouterr().err


def test_choosing_claims():
    assert not claims.selecting({}) and claims.selecting({"claims": ["law/*"]})
    assert claims.selecting({"budget_gpu_hours": 0})
    with pytest.raises(WorkflowError):
        claims.check_budget_setting(False, {"scale": "mini", "budget_gpu_hours": 5})
    claims.check_budget_setting(True, {"scale": "paper", "budget_gpu_hours": 5})
    sel = types.SimpleNamespace(claims=["a/1"], jobs=["train:r1", "power:p", "eval:r1"])
    assert claims.study_runs(sel, True, ["r1", "r2"]) == ["r1"] and claims.study_runs(sel, False, ["r1", "r2"]) == [
        "r1",
        "r2",
    ]
    assert claims.study_power_methods(sel, True, {"p": {}, "q": {}}) == ["p"]
    assert claims.study_power_methods(sel, False, {"p": {}, "q": {}}) == ["p", "q"]
    ledger = [{"id": "a/1", "measure": {"artifact": "fig2"}}, {"id": "b/1", "measure": {"artifact": "fig3"}}]
    assert claims.built_artifacts(ledger, sel, True, ["fig2", "fig3"]) == ["fig2"]
    assert claims.study_models(MINI, False, [], []) == MINI.models


def test_no_gpu_hours_at_mini_scale():
    hours = claims.job_hours(MINI, None, {}, MINI.scale.config.get("budget"), {"c": ["train:a", "eval:a"]})
    assert hours == {"train:a": 0.0, "eval:a": 0.0}


# ---- resources ------------------------------------------------------------------------------------


def test_a_runs_slurm_resources():
    res = resources.train_resources(Placement(2, 4, 1), 80.0, 1.5, "--export-file=env", 2880)
    assert res == {
        "nodes": 2,
        "gpu": 8,
        "cpus_per_task": 32,
        "mem_mb_per_cpu": 8000,
        "slurm_extra": "--requeue --export-file=env",
        "runtime": 900,
    }
    # the floor
    assert resources.train_resources(Placement(1, 8, 1), 1.0, 1.5, "x", 2880)["runtime"] == 60
    # the site's
    assert resources.train_resources(Placement(1, 8, 1), 1e4, 1.5, "x", 2880)["runtime"] == 2880
    engine = resources.engine_resources(lambda wc: 2, lambda wc: 10.0, 1.2)
    assert engine["gpu"](None) == 2 and engine["cpus_per_task"](None) == 16 and engine["runtime"](None) == 360
    hours = {"train:a": 1.0, "eval:a": 2.0, "power:p": 3.0, "speed:pilot": 0.1}
    assert resources.pilot_speed_minutes(hours, 1.5) == 30
    run = PAPER.runs[0]  # the plan's: the run's own hours and placement, the GPU rule's hours for an engine
    train = PAPER_PLAN.train_resources(run)
    assert train["slurm_extra"] == f"--requeue {resources.SLURM_JOB_ENV_FLAG}" and train is PAPER_PLAN.train_resources(
        run
    )
    engine = PAPER_PLAN.engine_resources("evaluate_vllm", lambda wc: 1)
    margin = PAPER.scale.config["budget"]["walltime_margin"]
    minutes = budget.runtime_minutes(PAPER_PLAN.job_hours[f"eval:{run}"], 1, margin)
    assert engine["runtime"]({"run": run}) == minutes


# ---- estimate -------------------------------------------------------------------------------------


def test_the_runs_the_targets_need_that_have_not_trained(tmp_path, monkeypatch):
    config = {**CONFIG, "scale": "paper", "claims": ["law/*"]}
    monkeypatch.chdir(tmp_path)  # nothing trained here, but for the first study run
    some = plan_of(config)
    trained = some.study_runs[0]
    (tmp_path / paths.RUN_METRICS.format(run=trained)).parent.mkdir(parents=True)
    (tmp_path / paths.RUN_METRICS.format(run=trained)).write_text("")
    assert estimate.requested_runs(some) == some.study_runs[1:]
    assert estimate.requested_runs(plan_of(config, targets={"evaluations"})) == sorted(set(PAPER.runs) - {trained})
    assert estimate.requested_runs(plan_of(config, targets={"pilot"})) == PAPER.pilot_runs
    other = next(r for r in PAPER.runs if r not in some.study_runs)
    fig = next(n for n in PAPER.artifact_names if other in PAPER.scale.config["artifacts"][n]["runs"])
    targets = {paths.EVAL_SUMMARY.format(run=other), f"{fig}_x"}
    assert estimate.requested_runs(plan_of(config, targets=targets)) == sorted(
        set(PAPER.scale.config["artifacts"][fig]["runs"]) | {other}
    )
    samples = str(tmp_path / "{method}.parquet")
    (tmp_path / "b.parquet").write_text("")  # sampled
    assert estimate.requested_power_methods(None, {"x": 1}, ["b", "m"], samples) == ["m"]
    assert estimate.requested_power_methods({"fit_table"}, {"x": 1}, ["m"], samples) == []
    assert estimate.requested_power_methods(None, None, ["m"], samples) == []


def test_the_estimate_message():
    hours = {"train:a": 10.0, "eval:a": 1.0, "train:b": 20.0, "eval:b": 2.0, "power:m": 3.0}
    budget = PAPER.scale.config["budget"]
    assert estimate.budget_message([], [], hours, False, [], budget, None) is None
    text = estimate.budget_message(["a", "b"], ["m"], hours, False, ["b"], budget, "est.json")
    assert (
        "2 run(s)" in text and "30 training + 2 evaluation" in text and text.endswith("(est.json), not config.yaml's")
    )
    assert "+ 3 evaluation" in estimate.budget_message(["a", "b"], [], hours, True, [], budget, None)


def test_a_retrained_run_is_checked_unless_its_preflight_runs_first(monkeypatch):
    a, b = Job("train_verl", run="a"), Job("train_verl", run="b")
    pre_b, ev = Job("preflight", run="b"), Job("evaluate_vllm", run="a")
    plan = Workflow([a, b, pre_b, ev], deps={a: {Job("preflight", run="a"): set()}, b: {pre_b: set()}})
    assert estimate.retrained_runs(plan) == ["a"]
    checked = []
    monkeypatch.setattr(estimate, "check_launches", lambda S, runs: checked.append(runs))
    estimate.check_retrained_launches(plan, {}, False)
    estimate.check_retrained_launches(plan, {}, True)
    estimate.check_retrained_launches(Workflow([a], touch=True), {}, False)
    assert checked == [["a"]]


def test_a_launch_that_would_fail_stops_the_workflow(monkeypatch, capsys):
    monkeypatch.setattr(
        estimate.preflight, "launch_problems_cached", lambda S, run, cache: ["bad key"] if run == "b" else []
    )
    estimate.check_launches({}, [])
    estimate.check_launches({}, ["a"])
    assert "preflight: 1 run(s) to train composed" in capsys.readouterr().err
    with pytest.raises(WorkflowError, match="1 of 2 run.s. would fail at launch.*\n  b: bad key"):
        estimate.check_launches({}, ["a", "b"])


# ---- pilot ----------------------------------------------------------------------------------------


def test_the_pilots_jobs_cost_and_stages():
    jobs = PAPER_PLAN.pilot_methods
    names = pilot.jobs(PAPER_PLAN)
    assert names[0] == f"train:{PAPER.pilot_runs[0]}" and names[-1] == "speed:pilot" and len(names) == 3 + len(jobs)
    text = pilot.plan_message(PAPER_PLAN)
    total = sum(PAPER_PLAN.job_hours[n] for n in names)
    assert text.startswith(f"GPU pilot: {len(names)} GPU jobs") and f"{total:.2f} GPU-hours" in text
    stages = pilot.stages(PAPER_PLAN)
    assert [s["name"] for s in stages][:5] == [
        "download_model",
        "preflight",
        "train_verl",
        "preflight_eval",
        "evaluate_vllm",
    ]
    assert stages[-1]["outputs"] == [paths.PILOT_SPEED]
    run = PAPER.pilot_runs[0]  # every log and checkpoint path from core.paths' templates, none spelled again
    train = stages[2]
    assert (train["log"], train["verl_logs_dir"]) == (
        paths.TRAIN_LOG.format(run=run),
        paths.RUN_CHECKPOINTS.format(run=run),
    )
    assert stages[-1]["log"] == paths.PILOT_SPEED_LOG
    logs = [paths.MODEL_LOG, paths.RUN_PREFLIGHT_LOG, paths.TRAIN_LOG, paths.EVAL_PREFLIGHT_LOG, paths.EVAL_LOG]
    assert [s["log"] for s in stages[:5]] == [t.format(model=PAPER_PLAN.run_model(run), run=run) for t in logs]
    assert pilot.targeted({"pilot"}) and not pilot.targeted(None)
    assert list(pilot.report_scope(PAPER.scale)) == sorted(pilot.report_scope(PAPER.scale))
    speed_scope = pilot.speed_scope(PAPER.scale, PAPER.pilot)
    built = build("paper", speed_scope)  # as the speed job reads its params
    assert all(built.models[m].shape == PAPER.scale.models[m].shape for m in PAPER.pilot["speed"]["sizes"])


def test_a_failed_pilots_report_never_hides_the_error(monkeypatch, capsys):
    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(pilot.pilot_report, "write", fail)
    pilot.write_failed_report(plan_of({**CONFIG, "scale": "paper"}, targets={"pilot"}))
    assert "pilot: no report written (OSError: disk full)" in capsys.readouterr().err
    pilot.write_failed_report(PAPER_PLAN)  # the command line did not name the pilot: no report
    assert capsys.readouterr().err == ""


# ---- cluster --------------------------------------------------------------------------------------


def test_a_gated_download_without_a_token_stops_unless_staged_or_there(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(cluster.hub, "require_token", lambda repo, gated: asked.append((repo, gated)))
    shape = Shape("qwen2", 64, 128, 2, 4)
    models = {m: Model(m, shape, hub=f"org/{m}", gated=m != "n") for m in "mno"}
    config = {"hub": {"mirror": str(tmp_path / "mirror")}, "data": {"sources": {"d": {"hub": "org/d"}}}}
    scale = dataclasses.replace(PAPER.scale, models=models, config=config)
    (tmp_path / "mirror" / "org" / "o").mkdir(parents=True)  # staged in the mirror
    (tmp_path / "models" / "n").mkdir(parents=True)  # already downloaded
    cluster.check_hub_access(scale, str(tmp_path / "models" / "{model}"), str(tmp_path / "src" / "{source}"))
    assert asked == [("org/m", True), ("org/d", False)]


def test_the_job_environment_is_written_for_slurm_only_and_removed(tmp_path, monkeypatch):
    written = []
    monkeypatch.setattr(cluster.hub, "write_environment_without_token", written.append)
    cluster.write_job_environment(Workflow(local=True), "env")
    cluster.write_job_environment(Workflow(local=False), "env")
    assert written == ["env"]
    path = tmp_path / "env"
    path.write_text("X=1")
    cluster.remove_job_environment(str(path))
    cluster.remove_job_environment(str(path))
    assert not path.exists()


def test_the_pilots_run_on_a_node_is_the_study_run_cut_to_a_few_steps():
    """paper.pilot.speed.node: the speed run on its own model and placement, its command the study's but for the cut
    settings; trained and priced as a pilot job, read by the report, never evaluated."""
    config = json.loads(json.dumps(CONFIG))
    config["paper"]["pilot"]["speed"]["node"] = {"steps": 3}
    node_plan = plan_of({**config, "scale": "paper"})
    node = node_plan.scope
    assert PAPER.pilot_node_runs == [] and scope.NODE_RUN not in PAPER.scale.config["runs"]
    assert node.pilot_node_runs == [scope.NODE_RUN] and node.pilot_runs == PAPER.pilot_runs
    assert scope.NODE_RUN not in node.runs  # not a study run
    study_run = node.pilot["speed"]["run"]
    cut, whole = node.scale.runs[scope.NODE_RUN], node.scale.runs[study_run]
    differ = {k for k in cut.params().keys() | whole.params().keys() if cut.params().get(k) != whole.params().get(k)}
    assert differ == {"run_id", "steps", "val_every", "save_every", "val_max_samples"}  # run_id: the run's name
    # 8 GPUs, TP 2
    assert node.scale.placement(scope.NODE_RUN) == node.scale.placement(study_run)
    jobs = node_plan.pilot_methods
    assert pilot.jobs(node_plan)[-1] == f"train:{scope.NODE_RUN}"
    stages = pilot.stages(node_plan)
    assert stages[-1] == {
        "name": "train_verl",
        "job": scope.NODE_RUN,
        "log": paths.TRAIN_LOG.format(run=scope.NODE_RUN),
        "outputs": [paths.RUN_METRICS.format(run=scope.NODE_RUN)],
        "gpus": 8,
        "verl_logs_dir": paths.RUN_CHECKPOINTS.format(run=scope.NODE_RUN),
    }
    hours = claims.job_hours(node, None, jobs, node.scale.config["budget"], {})
    three = budget.train_gpu_hours(
        cut,
        node.scale.models["qwen2.5-7b"].placement,
        architectures.of_model(node.scale, "qwen2.5-7b"),
        node.scale.config["budget"],
        16,
    )
    assert hours[f"train:{scope.NODE_RUN}"] == pytest.approx(three + 8 * node.pilot["startup_minutes"] / 60)
    assert f"eval:{scope.NODE_RUN}" not in hours


def test_a_figure_caption_says_what_its_seeds_vary():
    """At mini scale with several seeds, an artifact's caption says whether its runs' replicates share one base model
    (RL's randomness alone) or pre-train their own (core.spec.with_shared_base_models)."""
    from entropy_rl.study import artifacts as registry

    config = {**CONFIG, "scale": "mini"}
    captions = {}
    for shared in (True, False):
        cfg = {**config, "mini": {**config["mini"], "replicates": 3, "replicate_base_models": not shared}}
        captions[shared] = params.artifact_params(plan_of(cfg), "fig01_entropy_collapse")["caption"]
        assert captions[shared].endswith(registry.SEEDS[shared])
    one = {**config, "mini": {**config["mini"], "replicates": 1}}
    assert "Seeds:" not in params.artifact_params(plan_of(one), "fig01_entropy_collapse")["caption"]
