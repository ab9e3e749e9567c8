"""The GPU pilot's report, built from a fixture shaped like a real pilot's logs (tests/fixtures/pilot)."""

import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from entropy_rl.core import scale as core_scale
from entropy_rl.core import spec as run_spec
from entropy_rl.paper.cost import architectures, budget, efficiency, pilot_measures, pilot_report, shapes
from support import FIXTURES, ROOT, verl_dense_and_width

# The fixture's numbers, copied by hand from its verl logs (steps 1-4), for the arithmetic checks.
RESPONSE_MEAN = [612.4, 598.7, 571.2, 556.8]
GEN_S = [11.82, 11.37, 11.05, 10.64]
OLD_LOG_PROB_S = [2.41, 2.36, 2.44, 2.38]
UPDATE_S = [7.36, 7.21, 7.48, 7.27]
TOKENS = [101978, 99622, 97293, 94464]
MFU_ACTOR = [0.1408, 0.1405, 0.1322, 0.1321]
RESPONSES = 16 * 8  # the pilot run below: prompts_per_step × rollout_n
PEAK = 312e12  # config.yaml paper.budget: the A100 the fixture's pilot ran on
PROMPT, RESPONSE = 300, 1500  # config.yaml paper.budget's mean lengths


def roofline_s(model: str, tensor_parallel: int) -> float:
    """One A100's seconds a generated token of ``model`` takes at its roofline, by physics: the larger of its FLOPs
    (verl's count, after the prompt and half the answer) at the 312 TFLOPS peak and its bytes at 2.039 TB/s, the engine
    (verl's: half of each GPU's 80 GB, at most 256 sequences) holding what its room allows past the bf16 weights."""
    paper = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
    entry = paper["models"][model]  # its shape among its other settings
    family = entry["family"]
    dense, width = verl_counts(model)
    context = PROMPT + RESPONSE / 2
    weights = 2 * shapes.params(family, entry)
    head_dim = entry.get("head_dim", entry["hidden_size"] // entry["num_heads"])
    kv = 2 * entry["num_layers"] * entry["num_kv_heads"] * head_dim * 2
    held = min(256, (tensor_parallel * 80e9 * 0.5 - weights) // (kv * context))
    return max((2 * dense + 4 * context * width) / PEAK, (weights / held + kv * context) / 2.039e12)


def verl_counts(model: str = "qwen2.5-0.5b") -> tuple[float, float]:
    """The dense weights and attention width of a model, read back from verl's own FLOPs counter."""
    paper = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
    return verl_dense_and_width(paper["models"][model]["family"], paper["models"][model])


METHODS = ["pilot-plain", "pilot-power", "pilot-rl"]


def study() -> dict:
    """The paper study as the study plan builds it, plus the pilot's run: the smallest model, four steps."""
    paper = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
    S = run_spec.with_replicates(run_spec.with_instruct_models(paper), 0, paper.get("replicates", 1))
    overrides = {"steps": 4, "prompts_per_step": 16, "rollout_n": 8, "save_every": 2}
    S["runs"]["pilot-grpo"] = {
        "model": "qwen2.5-0.5b",
        "algorithm": "grpo",
        "treatment": "none",
        "overrides": overrides,
    }
    return S


@pytest.fixture
def pilot(tmp_path):
    return make_pilot(tmp_path)


def make_pilot(tmp_path):
    """A copy of the fixture with the stages' outputs in place (their contents are not read), and its stages."""
    root = tmp_path / "results"
    shutil.copytree(FIXTURES / "pilot", root)
    outputs = {
        ("train_verl", "pilot-grpo"): [root / "runs/pilot-grpo/metrics.parquet", root / "runs/pilot-grpo/final"],
        ("evaluate_vllm", "pilot-grpo"): [root / "eval/pilot-grpo/summary.parquet"],
        **{("power_sample_vllm", m): [root / f"power/samples/{m}.parquet"] for m in METHODS},
    }
    for paths in outputs.values():
        for path in paths:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir() if path.name == "final" else path.touch()
    logs = {"train_verl": "train", "evaluate_vllm": "evaluate", "power_sample_vllm": "power"}
    stages = [
        pilot_measures.Stage(
            name,
            job,
            root / "logs" / logs[name] / f"{job}.log",
            paths,
            1,
            root / "runs/pilot-grpo/checkpoints" if name == "train_verl" else None,
        )
        for (name, job), paths in outputs.items()
    ]
    return root, stages


def build(tmp_path, stages, **kwargs):
    out = [tmp_path / f"pilot.{ext}" for ext in ("md", "html", "json")]
    summary = pilot_report.write(stages, core_scale.build("paper", study()), *out, **kwargs)
    assert json.loads(out[2].read_text()) == json.loads(json.dumps(summary))
    return out[0].read_text(), out[1].read_text(), summary


def table_rows(md: str, first_header: str) -> dict:
    """The rows of the Markdown table whose first column is ``first_header``, by their first two cells."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[tuple(cells[:2])] = cells
    return rows


def test_every_stage_has_its_row(pilot, tmp_path):
    root, stages = pilot
    md, page, summary = build(tmp_path, stages, gpu="NVIDIA A100-SXM4-80GB")
    rows = table_rows(md, "stage")
    assert len(rows) == 5 and all(r[2] == "passed" for r in rows.values())
    train = rows[("train_verl", "pilot-grpo")]
    assert train[3] == "22 min 11 s"  # 20:05:51,123 to 20:28:02,517, the gap between the launches included
    assert train[4] == "26.2 GB (trainer, torch peak)"  # the largest actor/perf/max_memory_reserved_gb
    rollout = RESPONSES * sum(RESPONSE_MEAN) / sum(GEN_S)
    training = sum(TOKENS) / sum([24.22, 30.5, 23.6, 30.04])  # perf/time_per_step, one GPU
    assert train[5] == f"{training:,.0f} tok/s/GPU training; {rollout:,.0f} generated tok/s rollout"
    assert train[6] == f"{sum(RESPONSE_MEAN) / 4:.0f} tokens"
    assert train[7] == f"[{root / 'logs/train/pilot-grpo.log'}](results/logs/train/pilot-grpo.log)"  # from tmp_path
    evaluate = rows[("evaluate_vllm", "pilot-grpo")]
    assert evaluate[3:6] == ["2 min 38 s", "71.8 / 79.3 GB (device)", f"{118342 / 14.62:,.0f} generated tok/s"]
    for method, tokens, seconds, memory in [
        ("pilot-plain", 46211, 9.87, "71.9"),
        ("pilot-power", 188532, 96.4, "72.0"),
        ("pilot-rl", 43980, 9.31, "71.9"),
    ]:
        row = rows[("power_sample_vllm", method)]
        assert row[4:6] == [f"{memory} / 79.3 GB (device)", f"{tokens / seconds:,.0f} generated tok/s"]
    measured = pilot_measures.measure(stages[1])
    assert measured["wall_s"] == pytest.approx(157.878)
    assert measured["generated_tokens_per_s"] == pytest.approx(118342 / 14.62)
    assert summary["pilot_stages"] == "5/5" and (summary["gpu"], summary["gpu_name"]) == (
        "A100",
        "NVIDIA A100-SXM4-80GB",
    )
    assert "<table>" in page and "pilot-grpo" in page


def test_the_resume_shows_in_the_attempts(pilot, tmp_path):
    _, stages = pilot
    train = pilot_measures.measure(stages[0], RESPONSES, 1)
    # verl's validation-only records (step 0; step 2 again, when the second launch restores its checkpoint) are no steps
    assert train["attempts"] == [
        {"log": "verl_log.1.jsonl", "steps": [1, 2]},
        {"log": "verl_log.2.jsonl", "steps": [3, 4]},
    ]
    md, _, _ = build(tmp_path, stages)
    assert (
        "train_verl pilot-grpo: attempt 1 (verl_log.1.jsonl): steps 1–2; "
        "attempt 2 (verl_log.2.jsonl): steps 3–4, resumed after step 2."
    ) in md


def test_measured_mfus_are_the_hand_computed_ones(pilot, tmp_path):
    _, stages = pilot
    _, _, summary = build(tmp_path, stages)
    # the rollout's efficiency: its generated tokens a second over the seconds a token's roofline allows. On the A100
    # (80 GB, 2.039 TB/s: its data sheet), in verl's engine (half the memory, 256 sequences), 0.5B decoding is
    # memory-bound: its bf16 weights shared by 256 answers, and 12 KiB of K and V for each of the 1,050 tokens read.
    rollout_mfu = roofline_s("qwen2.5-0.5b", 1) * RESPONSES * sum(RESPONSE_MEAN) / sum(GEN_S)
    assert summary["rollout_mfu"] == pytest.approx(rollout_mfu, rel=1e-4)  # the norms' weights aside
    assert 0.05 < rollout_mfu < 0.06  # the fixture's A100 decoding of a 0.5B model
    assert summary["train_mfu"] == pytest.approx(sum(MFU_ACTOR) / 4, rel=1e-12)  # verl's perf/mfu/actor
    sources = summary["sources"]
    assert set(sources) == set(study()["budget"])
    assert {k: s["source"] for k, s in sources.items()} == {
        "gpu": "assumed",  # no speed job here, no device name: taken as the budget's A100
        "gpu_peak_tflops": "assumed",
        "train_mfu": "measured",
        "rollout_mfu": "measured",
        "mean_prompt_tokens": "assumed",
        "mean_response_tokens": "assumed",
        "walltime_margin": "assumed",
        "ranges": "assumed",
        "gen_batches": "assumed",  # these logs carry no paper/gen_batches (below, they do)
        "lengths": "assumed",
    }
    assert "not a trained run's" in sources["mean_response_tokens"]["reason"]
    assert sources["mean_response_tokens"]["value"] == 1500

    # The group filter's batches as verl_plugin.GenerationBound logs them: their mean is charged for the refills
    batches = iter([1.0, 1.5, 2.5, 1.0] * 2)  # steps 1-4 (step 2 logged again by the second launch's records aside)
    for path in sorted(stages[0].verl_logs_dir.glob("verl_log.*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for r in records:
            if "perf/time_per_step" in r["data"]:
                r["data"]["paper/gen_batches"] = next(batches)
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _, _, summary = build(tmp_path, stages)
    assert summary["gen_batches"]["expected"] == pytest.approx(1.5)
    assert summary["sources"]["gen_batches"]["source"] == "measured"

    # Without perf/mfu/actor, train MFU comes from the timings and budget.train_gpu_hours' (2 + 6·epochs)·N per token
    for path in stages[0].verl_logs_dir.glob("verl_log.*.jsonl"):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for r in records:
            r["data"].pop("perf/mfu/actor", None)
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _, _, summary = build(tmp_path, stages)
    dense, width = verl_counts()
    forward = 2 * dense + 2 * (PROMPT + RESPONSE) * width  # a forward pass's FLOPs a token, verl's count
    by_timings = 4 * forward * sum(TOKENS) / (sum(OLD_LOG_PROB_S) + sum(UPDATE_S)) / PEAK  # log-probs + one epoch
    assert summary["train_mfu"] == pytest.approx(by_timings, rel=1e-12)
    assert summary["sources"]["train_mfu"]["source"] == "measured"
    assert summary["rollout_mfu"] == pytest.approx(rollout_mfu, rel=1e-4)


def test_the_reestimate_moves_each_term_by_its_mfu_ratio(pilot):
    _, stages = pilot
    S = study()
    scale = core_scale.build("paper", S)
    train = pilot_measures.measure(stages[0], RESPONSES, 1)
    timed = {"gpu": "A100", "gpu_peak_tflops": 312, "why": "the fixture's"}
    measured_budget, _ = pilot_measures.measured_budget(
        S["budget"], train, architectures.of_model(scale, "qwen2.5-0.5b"), 1, timed
    )
    assumed = pilot_measures.reestimate(scale, S["budget"])
    measured = pilot_measures.reestimate(scale, measured_budget)
    assert list(assumed["model"]) == list(measured["model"])
    assert assumed["runs"].sum() == len(S["runs"]) - 1  # every run but the pilot's
    train_ratio = S["budget"]["train_mfu"] / measured_budget["train_mfu"]
    rollout_ratio = S["budget"]["rollout_mfu"] / measured_budget["rollout_mfu"]
    assert train_ratio > 1.5 and abs(rollout_ratio - 1) > 0.05  # the fixture's pilot is not the configured guess
    for col, ratio in [
        ("update_gpu_hours", train_ratio),
        ("rollout_gpu_hours", rollout_ratio),
        ("eval_gpu_hours", rollout_ratio),
    ]:
        assert list(measured[col]) == pytest.approx(list(assumed[col] * ratio), rel=1e-9)
    assert list(measured["train_gpu_hours"]) == pytest.approx(
        list(measured["rollout_gpu_hours"] + measured["update_gpu_hours"])
    )
    # the assumed totals are budget.train_gpu_hours run by run, as the study plan's job hours sum them, and the
    # update term is by hand: steps × responses × (prompt + response tokens) × passes × a forward's FLOPs at train_mfu
    val_questions = sum(b["size"] for b in S["data"]["benchmarks"].values())
    cfg = S["budget"]
    for _, row in assumed.iterrows():
        runs = [run for r, run in scale.runs.items() if run.model == row["model"] and not r.startswith("pilot-")]
        placement, arch = scale.models[row["model"]].placement, architectures.of_model(scale, row["model"])
        expected = sum(budget.train_gpu_hours(run, placement, arch, cfg, val_questions) for run in runs)
        assert row["train_gpu_hours"] == pytest.approx(expected, rel=1e-12)
        # a forward pass a token by verl's counter; passes: log-probs, the reference where a KL loss needs it, three
        # an epoch, and PRIME's reward model (its scores, its reference, its update)
        dense, width = verl_counts(row["model"])

        def tokens(s):  # the train set's mean lengths where the budget gives them, the answer at most the run's cap
            own = cfg.get("lengths", {}).get(s.train_data, {})
            response = min(own.get("response_tokens", cfg["mean_response_tokens"]), s.max_response_length)
            return own.get("prompt_tokens", cfg["mean_prompt_tokens"]) + response

        update = sum(
            s.steps
            * s.prompts_per_step
            * s.rollout_n
            * tokens(s)
            * (2 * dense + 2 * tokens(s) * width)
            * (1 + (s.loss.kl_loss_coef > 0) + 3 * s.ppo_epochs + (6 if s.algorithm == "prime" else 0))
            for s in runs
        )
        update /= cfg["gpu_peak_tflops"] * 1e12 * cfg["train_mfu"] * 3600
        assert row["update_gpu_hours"] == pytest.approx(update, rel=1e-9)


def test_a_failed_stage_shows_failed_with_its_log_tail(pilot, tmp_path):
    root, stages = pilot
    (root / "power/samples/pilot-power.parquet").unlink()
    traceback = [
        f'  File "/opt/venv/lib/python3.11/site-packages/vllm/engine.py", line {k}, in step' for k in range(25)
    ]
    with open(root / "logs/power/pilot-power.log", "a") as log:
        log.write(
            "\n".join(["Traceback (most recent call last):", *traceback, "torch.OutOfMemoryError: CUDA out of memory"])
            + "\n"
        )
    (root / "power/samples/pilot-rl.parquet").unlink()
    (root / "logs/power/pilot-rl.log").unlink()
    md, page, summary = build(tmp_path, stages)
    rows = table_rows(md, "stage")
    assert [rows[("power_sample_vllm", m)][2] for m in METHODS] == ["passed", "failed", "failed"]
    assert rows[("power_sample_vllm", "pilot-rl")][3] == "–"  # no log, no wall time
    assert summary["pilot_stages"] == "3/5"
    failed = pilot_measures.measure(stages[3])
    assert failed["passed"] is False and failed["missing"] == [str(root / "power/samples/pilot-power.parquet")]
    assert failed["tail"] == traceback[-19:] + ["torch.OutOfMemoryError: CUDA out of memory"]
    assert "## Failed: power_sample_vllm pilot-power" in md
    assert "```\n" + "\n".join(failed["tail"]) + "\n```" in md
    assert "Traceback (most recent call last):" not in md  # beyond the last 20 lines
    assert f"(no log at {root / 'logs/power/pilot-rl.log'})" in md
    assert "torch.OutOfMemoryError" in page and "&quot;/opt/venv" in page  # escaped in HTML


def test_the_report_links_each_stage_to_its_log(pilot, tmp_path, monkeypatch):
    """Written where the rule writes it (core.paths: PILOT_REPORT, PILOT_REPORT_HTML beside it) with the logs as the
    rules name them, the report links each stage's log relative to itself: its row's log cell and, for a failed stage,
    the line over its log's tail. Every link resolves to the stage's log file."""
    root, stages = pilot
    monkeypatch.chdir(tmp_path)  # the workflow's directory, from which the rules name their logs
    stages = [dataclasses.replace(s, log=str(Path(s.log).relative_to(tmp_path))) for s in stages]
    (root / "power/samples/pilot-power.parquet").unlink()
    md_path, html_path = Path("results/pilot/report.md"), Path("results/pilot/report.html")
    pilot_report.write(stages, core_scale.build("paper", study()), md_path, html_path, "results/pilot/estimate.json")
    md, page = md_path.read_text(), html_path.read_text()
    rows = table_rows(md, "stage")
    for stage in stages:
        assert rows[(stage.name, stage.job)][7] == f"[{stage.log}](../{Path(stage.log).relative_to('results')})"
    links = re.findall(r"\[([^\]]+)\]\(([^)]+)\)", md)
    hrefs = re.findall(r'<a href="([^"]+)">([^<]+)</a>', page)
    failed = "results/logs/power/pilot-power.log"
    assert [text for text, _ in links] == [s.log for s in stages] + [failed]  # the rows, then the failed stage's tail
    assert [text for _, text in hrefs] == [text for text, _ in links]
    for (text, href), (page_href, _) in zip(links, hrefs):
        assert (md_path.parent / href).resolve() == (html_path.parent / page_href).resolve() == Path(text).resolve()
        assert Path(text).is_file()
    assert f"; the last lines of [{failed}](../logs/power/pilot-power.log):" in md


def test_the_report_module_loads_no_torch():
    heavy = ("torch", "verl", "vllm", "transformers")
    code = f"import json, sys, entropy_rl.paper.cost.pilot_report; print(json.dumps([m for m in {heavy} if m in sys.modules]))"
    env = {"PYTHONPATH": str(ROOT / "workflow"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(proc.stdout) == []


def test_a_pilot_that_failed_before_any_training_step_still_gets_its_report(tmp_path, monkeypatch):
    """What the workflow's onerror writes (the Snakefile's onerror, pipeline.pilot.write_failed_report): no verl log, no outputs, one traceback."""
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "train.log"
    log.write_text("2026-11-25 09:00:00,000 entropy_rl INFO starting afresh\nRuntimeError: CUDA out of memory\n")
    stage = pilot_measures.Stage(
        name="train_verl",
        job="pilot-grpo",
        log=str(log),
        outputs=[str(tmp_path / "metrics.parquet")],
        gpus=1,
        verl_logs_dir=str(tmp_path / "checkpoints"),
    )
    summary = pilot_report.write([stage], core_scale.build("paper", study()), "r.md", "r.html", "failed.json")
    report = (tmp_path / "r.md").read_text()
    assert summary["pilot_stages"] == "0/1" and "CUDA out of memory" in report and "failed" in report
    assert all(s["source"] == "assumed" for s in summary["sources"].values())  # nothing measured, nothing claimed


def test_the_run_on_a_node_prices_its_own_architecture(pilot, tmp_path):
    """paper.pilot.speed.node: the speed run's steps on its 8 GPUs (here the fixture's verl logs, read as that run's)
    give the 7B architecture its MFUs, measured with communication and weight sync in them: verl's update MFU, and the
    rollout's generated tokens a second over the node's GPUs at the 7B's FLOPs a token; every other model keeps the
    configured ones."""
    from entropy_rl.pipeline import scope

    _, stages = pilot
    S = study()
    S["runs"][scope.NODE_RUN] = scope.node_run(S, "qwen2.5-7b-grpo-klcov", 3)
    train = stages[0]
    node = dataclasses.replace(train, job=scope.NODE_RUN, gpus=8)
    out = [tmp_path / f"node.{ext}" for ext in ("md", "html", "json")]
    scale = core_scale.build("paper", S)
    summary = pilot_report.write([*stages, node], scale, *out)
    point = summary["speed_laws"]["node"]
    assert (point["model"], point["gpus"], point["tensor_parallel"], point["steps"]) == ("qwen2.5-7b", 8, 2, 4)
    assert point["train_mfu"] == pytest.approx(sum(MFU_ACTOR) / 4)
    rate = 256 * 8 * sum(RESPONSE_MEAN) / sum(GEN_S)  # the 7B run's responses a step, the fixture's lengths and times
    assert point["rollout_mfu"] == pytest.approx(roofline_s("qwen2.5-7b", 2) * rate / 8, rel=1e-4)
    by_size = summary["mfu_by_size"]
    for model in ("qwen2.5-7b", "qwen2.5-7b-instruct"):
        assert by_size[model]["train_mfu"] == {
            "value": pytest.approx(point["train_mfu"]),
            "source": "measured on a node (8 GPUs, TP 2)",
        }
    assert "train_mfu" not in by_size["mistral-7b"]  # no speed law here: the configured MFU
    priced = {**S["budget"], "speed_laws": summary["speed_laws"]}
    on_node = efficiency.of(priced, "rollout_mfu", architectures.of_model(scale, "qwen2.5-7b"), PROMPT, RESPONSE)
    assert (on_node.value, on_node.source) == (pytest.approx(point["rollout_mfu"]), "measured on a node (8 GPUs, TP 2)")
    assumed = efficiency.of(priced, "rollout_mfu", architectures.of_model(scale, "mistral-7b"), PROMPT, RESPONSE)
    assert (assumed.value, assumed.source) == (S["budget"]["rollout_mfu"], "budget")
    assert "## qwen2.5-7b on a node" in out[0].read_text()
    # the pilot's own training is still the one training stage it reports the budget from
    assert summary["train_mfu"] == pytest.approx(sum(MFU_ACTOR) / 4)
