"""The rest of what the rule files compute (pipeline.power, params, claims, resources, estimate, pilot, cluster),
on small dict configs and on the paper scale as common.smk resolves it."""

import json
import os
import types

import pytest
import yaml
from entropy_rl.core import spec as run_spec
from entropy_rl.paper.cost import architectures, budget
from entropy_rl.pipeline import claims, cluster, estimate, params, pilot, power, resources, scope
from entropy_rl.pipeline.snakemake_api import WorkflowError
from fakes import Job, Plan
from support import ROOT

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
PAPER = scope.resolve({**CONFIG, "scale": "paper"})
MINI = scope.resolve({**CONFIG, "scale": "mini"})


# ---- power ----------------------------------------------------------------------------------------


def test_the_pilots_sampling_jobs_run_on_its_model_and_its_rl_checkpoint():
    jobs = power.pilot_methods(PAPER.S, PAPER.pilot, PAPER.pilot_runs)
    run = PAPER.pilot_runs[0]
    assert list(jobs)[:2] == ["pilot-plain", "pilot-power"] and list(jobs)[-1] == "pilot-rl"
    assert {j["model"] for j in jobs.values()} == {scope.run_model(PAPER.S, run)}
    assert jobs["pilot-rl"]["settings"] == {"kind": "sample", "temperature": 1.0, "run": run}
    assert jobs["pilot-power"]["settings"]["kind"] == "power"
    assert power.pilot_methods(MINI.S, None, []) == {}


def test_a_sampling_job_is_the_pilots_or_the_studys():
    study = power.study(PAPER.S, PAPER.replicates, PAPER.seed)
    pilots = power.pilot_methods(PAPER.S, PAPER.pilot, PAPER.pilot_runs)
    assert power.job(PAPER.S, study, pilots, "pilot-plain") is pilots["pilot-plain"]
    method = next(iter(study.methods))
    job = power.job(PAPER.S, study, pilots, method)
    assert job["settings"] == study.methods[method] and job["n"] == PAPER.power["n"]
    assert power.methods(None) == {} and power.study({"runs": {}}, 1, 0) is None
    assert power.benchmarks(PAPER.S, {}) == PAPER.power["benchmarks"]
    assert power.benchmarks(PAPER.S, {"benchmarks": ["amc"]}) == ["amc"]


# ---- params ---------------------------------------------------------------------------------------


def test_small_params():
    S = {"hub": {"lock": "locks/hub"}, "data": {"benchmarks": {"b": {"protocol": {"n": 1, "k": 2}}, "a": {"protocol": {}}}}}
    assert params.lock_file(S, "org/model") == os.path.join("locks/hub", "org--model.yaml")
    assert list(params.protocols(S, ["a", "b"])["b"]) == ["k", "n"]
    assert params.report_labels("table02_benchmarks") == {params.REPORT_LABEL: "table02_benchmarks · Table 2"}
    scope_ = params.preflight_power_scope(PAPER.S)
    assert scope_["runs"] == {} and list(scope_["models"]) == [PAPER.power["model"]]


def test_an_artifact_reads_only_what_it_registered():
    name = PAPER.artifact_names[0]
    inputs = params.artifact_inputs(PAPER.S, name, "code.json", [], metrics="m/{run}", summary="s/{run}", model_dir="d/{model}")
    runs = scope.with_replicates(PAPER.S, scope.artifact_runs(PAPER.S, name))
    assert inputs["code"] == "code.json"
    assert inputs.get("metrics", [f"m/{r}" for r in runs]) == [f"m/{r}" for r in runs]
    p = params.artifact_params(PAPER, None, name)
    assert p["runs"] == scope.artifact_runs(PAPER.S, name) and set(p["labels"]) == set(p["runs"])


def test_the_audits_params_list_the_claims_not_run_only_when_chosen():
    study = power.study(PAPER.S, PAPER.replicates, PAPER.seed)
    chosen = {"runs": PAPER.runs[:1], "evaluated": [], "models": PAPER.models[:1]}
    p = params.audit_params(PAPER, study, chosen, {"law/x": 12.345})
    assert p["not_run"] == {"law/x": 12.3} and p["runs"] == PAPER.runs[:1] and p["scale"] == "paper"
    assert params.audit_params(PAPER, study, chosen, None)["not_run"] == {}
    assert p["power"]["model"] == PAPER.power["model"]


# ---- claims ---------------------------------------------------------------------------------------


def test_the_budget_is_config_yamls_or_the_pilots_measured_mfus(tmp_path, capsys):
    S = {"budget": {"gpu": "A100", "gpu_peak_tflops": 312, "train_mfu": 0.3, "rollout_mfu": 0.05, "walltime_margin": 1.5}}
    estimate_file = tmp_path / "estimate.json"
    assert claims.budget_assumptions(S, False, str(estimate_file)) is S["budget"]
    assert claims.budget_source(S, False, S["budget"], "e.json").endswith("config.yaml paper.budget, assumed, A100 hours")
    on_a100 = {"gpu": "A100", "gpu_peak_tflops": 312}
    estimate_file.write_text(json.dumps({"train_mfu": 0.2, "rollout_mfu": 0.1, **on_a100}))
    measured = claims.budget_assumptions(S, False, str(estimate_file))
    assert measured == {**S["budget"], "train_mfu": 0.2, "rollout_mfu": 0.1}
    assert "measured at its one model size" in claims.budget_source(S, False, measured, "e.json")
    assert claims.budget_assumptions(S, True, str(estimate_file)) is S["budget"]  # mini: never measured
    estimate_file.write_text(json.dumps({"train_mfu": 0.2, "rollout_mfu": 0.1, "speed_laws": {"a": 1}, **on_a100}))
    laws = claims.budget_assumptions(S, False, str(estimate_file))
    assert laws["speed_laws"] == {"a": 1} and "speed laws" in claims.budget_source(S, False, laws, "e.json")
    # timed on an H200: refused under an A100 budget, unless a conversion is stated (2 A100 seconds an H200 second)
    estimate_file.write_text(json.dumps({"train_mfu": 0.2, "rollout_mfu": 0.1, "gpu": "H200", "gpu_peak_tflops": 989}))
    with pytest.raises(WorkflowError, match="gpu_conversion.H200"):
        claims.budget_assumptions(S, False, str(estimate_file))
    S["budget"]["gpu_conversion"] = {"H200": {"factor": 2.0, "source": "a test"}}
    converted = claims.budget_assumptions(S, False, str(estimate_file))
    assert (converted["train_mfu"], converted["rollout_mfu"]) == (pytest.approx(0.2 * 989 / 624), pytest.approx(0.1 * 989 / 624))
    estimate_file.write_text("{}")
    assert claims.budget_assumptions(S, False, str(estimate_file)) is S["budget"]
    assert "unreadable" in capsys.readouterr().err


def test_choosing_claims():
    assert not claims.selecting({}) and claims.selecting({"claims": ["law/*"]})
    assert claims.selecting({"budget_gpu_hours": 0})
    with pytest.raises(WorkflowError):
        claims.check_budget_setting(True, {"budget_gpu_hours": 5})
    claims.check_budget_setting(False, {"budget_gpu_hours": 5})
    sel = types.SimpleNamespace(claims=["a/1"], jobs=["train:r1", "power:p", "eval:r1"])
    assert claims.study_runs(sel, True, ["r1", "r2"]) == ["r1"] and claims.study_runs(sel, False, ["r1", "r2"]) == ["r1", "r2"]
    assert claims.study_power_methods(sel, True, {"p": {}, "q": {}}) == ["p"]
    assert claims.study_power_methods(sel, False, {"p": {}, "q": {}}) == ["p", "q"]
    ledger = [{"id": "a/1", "measure": {"artifact": "fig2"}}, {"id": "b/1", "measure": {"artifact": "fig3"}}]
    assert claims.built_artifacts(ledger, sel, True, ["fig2", "fig3"]) == ["fig2"]
    assert claims.study_models(MINI, False, [], []) == MINI.models


def test_no_gpu_hours_at_mini_scale():
    hours = claims.job_hours(MINI, None, {}, MINI.S.get("budget"), {"c": ["train:a", "eval:a"]})
    assert hours == {"train:a": 0.0, "eval:a": 0.0}


# ---- resources ------------------------------------------------------------------------------------


def test_a_runs_slurm_resources():
    res = resources.train_resources({"nodes": 2, "gpus_per_node": 4}, 80.0, 1.5, "--export-file=env", 2880)
    assert res == {"nodes": 2, "gpu": 8, "cpus_per_task": 32, "mem_mb_per_cpu": 8000,
                   "slurm_extra": "--requeue --export-file=env", "runtime": 900}  # fmt: skip
    assert resources.train_resources({"nodes": 1, "gpus_per_node": 8}, 1.0, 1.5, "x", 2880)["runtime"] == 60  # the floor
    assert resources.train_resources({"nodes": 1, "gpus_per_node": 8}, 1e4, 1.5, "x", 2880)["runtime"] == 2880  # the site's
    engine = resources.engine_resources(lambda wc: 2, lambda wc: 10.0, 1.2)
    assert engine["gpu"](None) == 2 and engine["cpus_per_task"](None) == 16 and engine["runtime"](None) == 360
    hours = {"train:a": 1.0, "eval:a": 2.0, "power:p": 3.0, "speed:pilot": 0.1}
    assert (resources.train_hours(hours, "a"), resources.eval_hours(hours, "a"), resources.power_hours(hours, "p")) == (1.0, 2.0, 3.0)
    assert resources.pilot_speed_minutes(hours, 1.5) == 30


# ---- estimate -------------------------------------------------------------------------------------


def test_the_runs_the_targets_need_that_have_not_trained(tmp_path):
    S = {"artifacts": {"fig07": {"runs": ["c"]}}}
    metrics = str(tmp_path / "{run}.parquet")
    (tmp_path / "b.parquet").write_text("")
    runs, study = ["a", "b", "c", "d"], ["a", "b"]
    assert estimate.requested_runs(None, S, runs, study, ["p"], metrics) == ["a"]  # b has trained
    assert estimate.requested_runs({"evaluations"}, S, runs, study, ["p"], metrics) == ["a", "c", "d"]
    assert estimate.requested_runs({"pilot"}, S, runs, study, ["p"], metrics) == ["p"]
    assert estimate.requested_runs({"results/eval/d/summary.parquet", "fig07_x"}, S, runs, study, [], metrics) == ["c", "d"]
    samples = str(tmp_path / "{method}.parquet")
    assert estimate.requested_power_methods(None, {"x": 1}, ["b", "m"], samples) == ["m"]
    assert estimate.requested_power_methods({"fit_table"}, {"x": 1}, ["m"], samples) == []
    assert estimate.requested_power_methods(None, None, ["m"], samples) == []


def test_the_estimate_message():
    hours = {"train:a": 10.0, "eval:a": 1.0, "train:b": 20.0, "eval:b": 2.0, "power:m": 3.0}
    budget = PAPER.S["budget"]
    assert estimate.budget_message([], [], hours, False, [], budget, None) is None
    text = estimate.budget_message(["a", "b"], ["m"], hours, False, ["b"], budget, "est.json")
    assert "2 run(s)" in text and "30 training + 2 evaluation" in text and text.endswith("(est.json), not config.yaml's")
    assert "+ 3 evaluation" in estimate.budget_message(["a", "b"], [], hours, True, [], budget, None)


def test_a_retrained_run_is_checked_unless_its_preflight_runs_first(monkeypatch):
    a, b = Job("train_verl", run="a"), Job("train_verl", run="b")
    pre_b, ev = Job("preflight", run="b"), Job("evaluate_vllm", run="a")
    plan = Plan([a, b, pre_b, ev], deps={a: {Job("preflight", run="a"): set()}, b: {pre_b: set()}})
    assert estimate.retrained_runs(plan) == ["a"]
    checked = []
    monkeypatch.setattr(estimate, "check_launches", lambda S, runs: checked.append(runs))
    estimate.check_retrained_launches(plan, {}, False)
    estimate.check_retrained_launches(plan, {}, True)
    estimate.check_retrained_launches(Plan([a], touch=True), {}, False)
    assert checked == [["a"]]


def test_a_launch_that_would_fail_stops_the_workflow(monkeypatch, capsys):
    monkeypatch.setattr(estimate.preflight, "launch_problems_cached", lambda S, run, cache: ["bad key"] if run == "b" else [])
    estimate.check_launches({}, [])
    estimate.check_launches({}, ["a"])
    assert "preflight: 1 run(s) to train composed" in capsys.readouterr().err
    with pytest.raises(WorkflowError, match="1 of 2 run.s. would fail at launch.*\n  b: bad key"):
        estimate.check_launches({}, ["a", "b"])


# ---- pilot ----------------------------------------------------------------------------------------

PATHS = {"MODEL_DIR": "models/{model}", "RUN_PREFLIGHT": "pre/{run}", "RUN_METRICS": "m/{run}", "RUN_FINAL": "f/{run}",
         "EVAL_PREFLIGHT": "epre/{run}", "EVAL_SUMMARY": "s/{run}", "POWER_SAMPLES": "p/{method}", "PILOT_SPEED": "speed.json",
         "PILOT_REPORT": "report.md", "PILOT_REPORT_HTML": "report.html", "PILOT_FAILED": "failed.json",
         "MODEL_LOG": "ml/{model}", "RUN_PREFLIGHT_LOG": "prel/{run}", "TRAIN_LOG": "tl/{run}", "RUN_CHECKPOINTS": "c/{run}",
         "EVAL_PREFLIGHT_LOG": "eprel/{run}", "EVAL_LOG": "el/{run}", "POWER_LOG": "pl/{method}",
         "PILOT_SPEED_LOG": "speed.log"}  # fmt: skip


def test_the_pilots_jobs_cost_and_stages():
    jobs = power.pilot_methods(PAPER.S, PAPER.pilot, PAPER.pilot_runs)
    names = pilot.jobs(PAPER.pilot, PAPER.pilot_runs, jobs)
    assert names[0] == f"train:{PAPER.pilot_runs[0]}" and names[-1] == "speed:pilot" and len(names) == 3 + len(jobs)
    hours = dict.fromkeys(names, 0.5)
    text = pilot.plan_message(PAPER.S, PAPER.pilot, PAPER.pilot_runs, jobs, hours, PAPER.S["budget"])
    assert text.startswith(f"GPU pilot: {len(names)} GPU jobs") and f"{0.5 * len(names):.2f} GPU-hours" in text
    stages = pilot.stages(PAPER.S, PAPER.pilot, PAPER.pilot_runs, jobs, PATHS)
    assert [s["name"] for s in stages][:5] == ["download_model", "preflight", "train_verl", "preflight_eval", "evaluate_vllm"]
    assert stages[-1]["outputs"] == ["speed.json"] and set(pilot.STAGE_PATHS) <= set(PATHS)
    run = PAPER.pilot_runs[0]  # every log and checkpoint path from paths.smk's templates, none spelled again
    train = stages[2]
    assert (train["log"], train["verl_logs_dir"]) == (f"tl/{run}", f"c/{run}") and stages[-1]["log"] == "speed.log"
    assert [s["log"].split("/")[0] for s in stages[:5]] == ["ml", "prel", "tl", "eprel", "el"]
    assert pilot.targeted({"pilot"}) and not pilot.targeted(None)
    assert list(pilot.report_scope(PAPER.S)) == sorted(pilot.report_scope(PAPER.S))
    assert set(pilot.speed_scope(PAPER.S, PAPER.pilot)["architectures"]) == set(PAPER.pilot["speed"]["sizes"])


def test_a_failed_pilots_report_never_hides_the_error(monkeypatch, capsys):
    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(pilot.pilot_report, "write", fail)
    jobs = power.pilot_methods(PAPER.S, PAPER.pilot, PAPER.pilot_runs)
    pilot.write_failed_report(PAPER.S, PAPER.pilot, PAPER.pilot_runs, jobs, PATHS)
    assert "pilot: no report written (OSError: disk full)" in capsys.readouterr().err


# ---- cluster --------------------------------------------------------------------------------------


def test_a_gated_download_without_a_token_stops_unless_staged_or_there(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(cluster.hub, "require_token", lambda repo, gated: asked.append((repo, gated)))
    S = {"hub": {"mirror": str(tmp_path / "mirror")},
         "models": {"m": {"hub": "org/m", "gated": True}, "n": {"hub": "org/n"}, "o": {"hub": "org/o", "gated": True}},
         "data": {"sources": {"d": {"hub": "org/d"}}}}  # fmt: skip
    (tmp_path / "mirror" / "org" / "o").mkdir(parents=True)  # staged in the mirror
    (tmp_path / "models" / "n").mkdir(parents=True)  # already downloaded
    cluster.check_hub_access(S, str(tmp_path / "models" / "{model}"), str(tmp_path / "src" / "{source}"))
    assert asked == [("org/m", True), ("org/d", False)]


def test_the_job_environment_is_written_for_slurm_only_and_removed(tmp_path, monkeypatch):
    written = []
    monkeypatch.setattr(cluster.hub, "write_environment_without_token", written.append)
    cluster.write_job_environment(Plan(local=True), "env")
    cluster.write_job_environment(Plan(local=False), "env")
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
    node = scope.resolve({**config, "scale": "paper"})
    assert PAPER.pilot_node_runs == [] and scope.NODE_RUN not in PAPER.S["runs"]
    assert node.pilot_node_runs == [scope.NODE_RUN] and node.pilot_runs == PAPER.pilot_runs
    assert scope.NODE_RUN not in node.runs  # not a study run
    study_run = node.pilot["speed"]["run"]
    cut, whole = run_spec.resolve_run(node.S, scope.NODE_RUN), run_spec.resolve_run(node.S, study_run)
    differ = {k for k in cut.keys() | whole.keys() if cut.get(k) != whole.get(k)}
    assert differ == {"run_id", "steps", "val_every", "save_every", "val_max_samples"}  # run_id: the run's name
    assert run_spec.run_model_entry(node.S, scope.NODE_RUN) == run_spec.run_model_entry(node.S, study_run)  # 8 GPUs, TP 2
    jobs = power.pilot_methods(node.S, node.pilot, node.pilot_runs)
    assert pilot.jobs(node.pilot, node.pilot_runs, jobs)[-1] == f"train:{scope.NODE_RUN}"
    stages = pilot.stages(node.S, node.pilot, node.pilot_runs, jobs, PATHS)
    assert stages[-1] == {"name": "train_verl", "job": scope.NODE_RUN, "log": f"tl/{scope.NODE_RUN}", "gpus": 8,
                          "outputs": [f"m/{scope.NODE_RUN}"], "verl_logs_dir": f"c/{scope.NODE_RUN}"}  # fmt: skip
    hours = claims.job_hours(node, None, jobs, node.S["budget"], {})
    three = budget.train_gpu_hours(cut, node.S["models"]["qwen2.5-7b"], architectures.of_model(node.S, "qwen2.5-7b"),
                                   node.S["budget"], 16)  # fmt: skip
    assert hours[f"train:{scope.NODE_RUN}"] == pytest.approx(three + 8 * node.pilot["startup_minutes"] / 60)
    assert f"eval:{scope.NODE_RUN}" not in hours


def test_a_figure_caption_says_what_its_seeds_vary():
    """At mini scale with several seeds, an artifact's caption says whether its runs' replicates share one base model
    (RL's randomness alone) or pre-train their own (pipeline.scope.with_shared_base_models)."""
    import yaml
    from entropy_rl.pipeline import params as artifact_params
    from entropy_rl.pipeline import scope as study_scope
    from entropy_rl.study import artifacts as registry
    from support import ROOT

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    captions = {}
    for shared in (True, False):
        cfg = {**config, "mini": {**config["mini"], "replicates": 3, "replicate_base_models": not shared}}
        captions[shared] = artifact_params.artifact_params(study_scope.resolve(cfg), None, "fig01_entropy_collapse")["caption"]
        assert captions[shared].endswith(registry.SEEDS[shared])
    one = {**config, "mini": {**config["mini"], "replicates": 1}}
    assert "Seeds:" not in artifact_params.artifact_params(study_scope.resolve(one), None, "fig01_entropy_collapse")["caption"]
