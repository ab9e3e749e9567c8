"""The paper-scale preflight: verl's own validation, loaders and dataset on exactly what each GPU job
runs, and every vLLM engine checked against the model's published config.json and tokenizer files
(tests/fixtures/hub_models, with their sources)."""

import copy
import json
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from entropy_rl.core import modules
from entropy_rl.core.scale import build
from entropy_rl.paper import preflight, prompt_format, reward_launch, verl_names
from entropy_rl.paper.verl import checks
from support import FIXTURES, ROOT

pytestmark = pytest.mark.costly  # minutes of a core: scheduled first (tests/conftest.py)

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]  # the section as written, to edit
PAPER = build("paper", CONFIG)
HUB_MODELS = FIXTURES / "hub_models"
MAIN_PPO_RUNS = sorted(r for r, v in PAPER.runs.items() if v.trainer != "prime")


def fixture_dir(model: str) -> Path:
    return HUB_MODELS / PAPER.models[model].hub.replace("/", "--")


def test_every_main_ppo_run_of_the_paper_matrix_passes_verls_own_checks():
    """Composed, validate_config, reward loaded by verl and scored right/wrong, loss plugin called."""
    started = time.perf_counter()
    failures = {run: preflight.launch_problems(PAPER, run) for run in MAIN_PPO_RUNS}
    failures = {run: p for run, p in failures.items() if p}
    print(f"{len(MAIN_PPO_RUNS)} main_ppo runs: {len(failures)} with problems, {time.perf_counter() - started:.1f} s")
    assert failures == {}


def test_the_commands_of_todays_main_fail_where_verl_would():
    """Without dynamic micro-batches verl's validate_config refuses the command; a reward given as a
    file path fails in verl's loader (relative imports); the pkg:// form of the same module loads."""
    run = "qwen2.5-7b-grpo"
    s = PAPER.runs[run]
    command = preflight.bound_command(PAPER, run)
    no_dynamic = [a for a in command if "use_dynamic_bsz" not in a and "ppo_max_token_len" not in a]
    assert any("ppo_micro_batch_size" in p for p in checks.command_problems(no_dynamic, s))
    reward_file = str(modules.source(verl_names.REWARD_MODULE))
    as_file = [
        f"reward.custom_reward_function.path={reward_file}"
        if a.startswith("reward.custom_reward_function.path=")
        else a
        for a in command
    ]
    assert any("relative import" in p for p in checks.command_problems(as_file, s))
    assert checks.command_problems(command, s) == []


def test_a_command_with_a_setting_verl_ignores_is_refused_with_the_key_and_why():
    """verl 0.9.1 composes and validates each of these, then ignores it (with a warning on the GPU nodes, or none):
    the released scripts' max_num_gen_batches among them. The workflow's own command holds none; the preflight
    refuses each, naming the key and the verl code that ignores it, and a group filter without the bound."""
    run = "qwen2.5-7b-grpo-clipcov"  # Section 4: the released scripts' settings
    s = PAPER.runs[run]
    command = preflight.bound_command(PAPER, run)
    assert checks.command_problems(command, s) == []
    assert f"+{verl_names.GEN_BATCHES_KEY}=10" in command
    assert not any(a.startswith("algorithm.filter_groups.max_num_gen_batches=") for a in command)
    refused = {
        "algorithm.filter_groups.max_num_gen_batches=10": "PPOTrainer._resolve_filter_groups_metric",
        "algorithm.filter_groups.max_inflight_gen_batches=10": "PPOTrainer._build_replay_buffer",
        "data.gen_batch_size=256": "PPOTrainer._init_dataloader",
        # sampled validation while the command says do_sample=false
        "actor_rollout_ref.rollout.val_kwargs.temperature=0.6": "AgentLoopWorkerTQ.generate_sequences",
    }
    for extra, where in refused.items():
        problems = checks.command_problems([*command, extra], s)
        print(problems)
        key = extra.split("=")[0] if "temperature" not in extra else "actor_rollout_ref.rollout.val_kwargs.do_sample"
        assert len(problems) == 1 and problems[0].startswith(f"{key}=") and " is ignored" in problems[0], problems
        assert where in problems[0], problems
    other_mode = [a.replace(f"trainer_mode={verl_names.TRAINER_MODE}", "trainer_mode=sync") for a in command]
    refused = checks.command_problems(other_mode, s)
    assert any(p.startswith(f"trainer.v1.{verl_names.TRAINER_MODE} is ignored") for p in refused)
    unbounded = [a for a in command if not a.startswith(f"+{verl_names.GEN_BATCHES_KEY}=")]
    assert checks.command_problems(unbounded, s) == [
        (
            f"{verl_names.GEN_BATCHES_KEY} is unset or 0: with the group filter on, a step whose groups are all right or all"
            " wrong would generate without end (verl_plugin.GenerationBound)"
        )
    ]


def test_launches_state_what_verl_091_reads():
    cmd = preflight.bound_command(PAPER, "qwen2.5-32b-grpo-klcov", results="/scratch/results")
    cfg = checks.compose(cmd[3:])
    actor = cfg.actor_rollout_ref.actor
    assert cfg.trainer.use_v1 is True and cfg.algorithm.filter_groups.enable is True
    assert actor.optim.clip_grad == PAPER.runs["qwen2.5-32b-grpo-klcov"].grad_clip
    assert not any(a.startswith("actor_rollout_ref.actor.grad_clip=") for a in cmd)  # never read by verl 0.9.1
    assert cfg.trainer.max_actor_ckpt_to_keep == 2
    assert actor.use_dynamic_bsz and cfg.actor_rollout_ref.rollout.log_prob_use_dynamic_bsz
    assert actor.ppo_max_token_len_per_gpu >= cfg.data.max_prompt_length + cfg.data.max_response_length
    assert cfg.actor_rollout_ref.rollout.max_model_len == cfg.data.max_prompt_length + cfg.data.max_response_length
    for path in (
        cfg.actor_rollout_ref.model.path,
        cfg.data.train_files,
        cfg.data.val_files,
        cfg.trainer.default_local_dir,
    ):
        assert str(path).startswith("/scratch/results/"), path
    assert cfg.reward.custom_reward_function.path == "pkg://entropy_rl.core.reward"
    # The recorded command names neither the checkout nor the submitting host's interpreter.
    recorded = reward_launch.verl_command(PAPER, "qwen2.5-32b-grpo-klcov")
    assert recorded[0] == "python" and not any(str(ROOT) in a for a in recorded)


def test_a_model_without_a_tokenizer_template_gets_its_recorded_format_intact():
    cfg = checks.compose(preflight.bound_command(PAPER, "mistral-7b-grpo")[3:])
    fmt = PAPER.models["mistral-7b"].chat_template
    assert cfg.actor_rollout_ref.model.custom_chat_template == prompt_format.template_text(fmt)
    qwen = checks.compose(preflight.bound_command(PAPER, "qwen2.5-7b-grpo")[3:])
    assert qwen.actor_rollout_ref.model.custom_chat_template is None  # Qwen2.5's tokenizers carry their own


@pytest.mark.parametrize("model", sorted(PAPER.models))
def test_every_paper_model_fits_every_engine_it_is_started_in(model):
    if not (fixture_dir(model) / "config.json").exists():
        pytest.fail(f"no published config.json of {PAPER.models[model].hub} in {HUB_MODELS}")
    engines = preflight.engines(PAPER, model)
    assert engines and all(e["tensor_parallel"] == PAPER.models[model].placement.tensor_parallel for e in engines)
    # Where the published tokenizer_config.json could not be found (SOURCES.md), only config.json is checked.
    tokenizer = fixture_dir(model) if (fixture_dir(model) / "tokenizer_config.json").exists() else None
    assert preflight.model_problems(PAPER, model, fixture_dir(model), tokenizer) == []


def test_broken_runs_are_named_with_what_is_wrong():
    broken = copy.deepcopy(CONFIG)
    broken["runs"]["deepseek-math-7b-grpo"].pop("overrides")  # 2,048 + 8,192 tokens in a 4,096-token context
    problems = preflight.model_problems(
        build("paper", broken), "deepseek-math-7b", fixture_dir("deepseek-math-7b"), None
    )
    print("\n".join(problems))
    assert any("deepseek-math-7b-grpo" in p and "10240" in p and "4096" in p for p in problems)
    broken["models"]["qwen2.5-7b"]["tensor_parallel"] = 8  # the node's GPU count: 28 heads
    problems = preflight.model_problems(build("paper", broken), "qwen2.5-7b", fixture_dir("qwen2.5-7b"), None)
    assert problems and all("(28)" in p and "(8)" in p for p in problems)
    broken["models"]["llama3.2-3b"]["chat_template"] = "tokenizer"  # Llama-3.2-3B's tokenizer has none
    problems = preflight.model_problems(build("paper", broken), "llama3.2-3b", fixture_dir("llama3.2-3b"))
    assert any("template" in p for p in problems)


def write_verl_parquet(path, sources):
    rows = [
        {
            "data_source": s,
            "prompt": [{"role": "user", "content": f"What is {i} + 1? Put the final answer in \\boxed{{}}."}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str(i + 1)},
            "extra_info": {"index": i},
        }
        for i, s in enumerate(sources)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path)


def test_a_downloaded_model_and_prepared_data_go_through_verls_model_config_and_dataset(mini_tokenizer, tmp_path):
    """The whole run preflight on a real Hugging Face model directory and verl parquet: verl's
    HFModelConfig loads the tokenizer with the recorded template, RLHFDataset reads both files."""
    config = copy.deepcopy(CONFIG)
    run = "qwen2.5-0.5b-grpo"
    model = config["runs"][run]["model"]
    config["models"][model]["chat_template"] = "plain"  # the mini tokenizer carries no template
    scale = build("paper", config)
    results = tmp_path / "results"
    from entropy_rl.mini import models

    tiny, tokenizer = models.build_mini_model(
        "qwen2",
        {"hidden_size": 32, "intermediate_size": 64, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1},
        mini_tokenizer,
        seed=0,
    )
    tiny.save_pretrained(results / "models" / model)
    tokenizer.save_pretrained(results / "models" / model)
    config = json.loads((results / "models" / model / "config.json").read_text())
    config["max_position_embeddings"] = 32768  # the tiny model's config stands in for Qwen2.5-0.5B's
    (results / "models" / model / "config.json").write_text(json.dumps(config))
    benchmarks = sorted(scale.benchmarks)
    write_verl_parquet(
        results / "data" / "train" / f"{scale.models[model].train_data}.parquet", ["eurus2-math-train"] * 8
    )
    write_verl_parquet(results / "data" / "benchmarks" / "validation.parquet", benchmarks)
    assert preflight.run_problems(scale, run, str(results)) == []
    write_verl_parquet(results / "data" / "benchmarks" / "validation.parquet", benchmarks[:2])
    problems = preflight.run_problems(scale, run, str(results))
    assert any("not the benchmarks" in p for p in problems)


def test_the_command_line_reports_each_run(capsys):
    assert preflight.main(["qwen2.5-7b-grpo", "qwen2.5-7b-grpo-clipcov", "--config", str(ROOT / "config.yaml")]) == 0
    out = capsys.readouterr().out
    assert "ok   qwen2.5-7b-grpo (launch; " in out and "preflight: 0 of 2 runs with problems" in out
    assert "All configuration checks passed" not in out  # verl's own print, once per run, kept out


def test_the_preflight_rule_stops_a_run_whose_model_is_too_short_and_passes_it_once_fixed(mini_tokenizer, tmp_path):
    """The local rule each train_verl job depends on, run by Snakemake on a downloaded model and prepared
    data (a tiny Qwen2 stands in for Qwen2.5-0.5B): first with a context shorter than prompt + response."""
    import os
    import subprocess
    import sys

    from entropy_rl.mini import models

    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    model_dir = tmp_path / "results" / "models" / "qwen2.5-0.5b"
    tiny, tokenizer = models.build_mini_model(
        "qwen2",
        {"hidden_size": 32, "intermediate_size": 64, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1},
        mini_tokenizer,
        seed=0,
    )
    tiny.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    write_verl_parquet(tmp_path / "results" / "data" / "train" / "eurus2-math.parquet", ["eurus2-math-train"] * 8)
    write_verl_parquet(tmp_path / "results" / "data" / "benchmarks" / "validation.parquet", sorted(PAPER.benchmarks))
    target, eval_target = "results/preflight/qwen2.5-0.5b-grpo.txt", "results/preflight/eval/qwen2.5-0.5b-grpo.txt"
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        target,
        eval_target,
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(tmp_path),
        "--config",
        "scale=paper",
        "--cores",
        "1",
        "--keep-going",
        "--allowed-rules",
        "preflight",
        "preflight_eval",
    ]

    def context(tokens):
        config = json.loads((model_dir / "config.json").read_text())
        config["max_position_embeddings"] = tokens
        (model_dir / "config.json").write_text(json.dumps(config))

    context(4096)
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "HF_TOKEN": "x"}, cwd=tmp_path, check=False
    )
    log = (tmp_path / "results" / "logs" / "preflight" / "qwen2.5-0.5b-grpo.log").read_text()
    print(log[-1500:])
    assert proc.returncode != 0 and not (tmp_path / target).exists() and not (tmp_path / eval_target).exists()
    assert "train qwen2.5-0.5b-grpo (rollout): max_model_len 10240" in log and "4096" in log
    assert "evaluate" not in log  # the evaluation's engine is its own preflight's
    eval_log = (tmp_path / "results" / "logs" / "preflight" / "eval" / "qwen2.5-0.5b-grpo.log").read_text()
    assert "evaluate qwen2.5-0.5b-grpo: max_model_len 10240" in eval_log and "train" not in eval_log
    context(32768)  # what Qwen2.5-0.5B's config.json says
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "HF_TOKEN": "x"}, cwd=tmp_path, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / target).read_text() == "preflight of qwen2.5-0.5b-grpo: no problem found\n"
    assert (tmp_path / eval_target).read_text() == "preflight of qwen2.5-0.5b-grpo's evaluation: no problem found\n"


def test_a_passed_launch_is_not_checked_again_until_its_command_or_code_changes(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(preflight, "launch_problems", lambda scale, run, results="results": calls.append(run) or [])
    for _ in range(2):
        assert preflight.launch_problems_cached(PAPER, "qwen2.5-7b-grpo", tmp_path) == []
    assert calls == ["qwen2.5-7b-grpo"]
    edited = copy.deepcopy(CONFIG)
    edited["runs"]["qwen2.5-7b-grpo"]["overrides"] = {"lr": 1.0e-6}
    changed = build("paper", edited)
    preflight.launch_problems_cached(changed, "qwen2.5-7b-grpo", tmp_path)
    assert calls == ["qwen2.5-7b-grpo"] * 2
    monkeypatch.setattr(preflight, "launch_problems", lambda scale, run, results="results": ["broken"])
    assert preflight.launch_problems_cached(changed, "qwen2.5-7b-grpo-dapo", tmp_path) == ["broken"]
    assert preflight.launch_problems_cached(changed, "qwen2.5-7b-grpo-dapo", tmp_path) == [
        "broken"
    ]  # a failure is never cached


def test_a_launch_without_the_paper_measures_trainer_is_refused():
    """verl's plain trainer would train fine and log none of Eq. 5, Eq. 10 or Eq. 8-9: the preflight says so."""
    command = preflight.bound_command(PAPER, "qwen2.5-7b-grpo")
    cfg = checks.compose(command[3:])
    assert checks.trainer_problems(cfg) == []
    plain = checks.compose([*command[3:], "trainer.v1.trainer_mode=sync"])
    assert any("logs none of the paper's measures" in p for p in checks.trainer_problems(plain))
    unknown = checks.compose([*command[3:], "trainer.v1.trainer_mode=entropy_papr"])
    assert any("entropy_papr" in p for p in checks.trainer_problems(unknown))


def _leaves(entry: dict, prefix=()):
    for key, value in entry.items():
        yield from _leaves(value, (*prefix, key)) if isinstance(value, dict) else [((*prefix, key), value)]


def _perturbed(value):
    return (
        (not value) if isinstance(value, bool) else value + 1 if isinstance(value, (int, float)) else f"{value}-edited"
    )


def test_a_preflight_reads_only_the_model_fields_its_jobs_use():
    """Every leaf of a model's entry edited in turn: the power study's preflight (whose rerun reruns every sampling job
    after it) changes for the engine's fields only, and reads from its scope the engine the scale starts; a placed
    run's preflight changes not for the model's own tensor-parallel size, which the run's placement overrides (its
    training and evaluation read the placement)."""
    from entropy_rl.pipeline import params, scope

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    paper = scope.resolve({**config, "scale": "paper"})
    S, power_model = dict(paper.scale.config), paper.scale.config["power_sampling"]["model"]
    before = params.preflight_power_scope(paper.scale)
    assert [preflight.scoped_power_engine(before)] == preflight.engines(paper.scale, power_model, kinds=("power",))
    changed = set()
    for path, value in _leaves(S["models"][power_model]):
        edited = copy.deepcopy(S)
        edited["models"][power_model][path[-1]] = _perturbed(value)
        if params.preflight_power_scope(build("paper", edited)) != before:
            changed.add(path[-1])
    assert changed == {"tensor_parallel", "chat_template"}
    pilot_run = paper.pilot_runs[0]
    model = paper.scale.runs[pilot_run].model
    assert "placement" in S["runs"][pilot_run]
    for kind in ("rollout", "evaluate"):
        engine = preflight.run_engine(paper.scale, pilot_run, kind)
        edited = copy.deepcopy(S)
        edited["models"][model]["tensor_parallel"] = 4
        assert preflight.run_engine(build("paper", edited), pilot_run, kind) == engine, kind
        assert engine["tensor_parallel"] == paper.scale.placement(pilot_run).tensor_parallel == 1
