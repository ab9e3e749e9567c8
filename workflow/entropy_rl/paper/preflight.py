"""Preflight: every paper-scale GPU job checked by verl's own code, as far as it runs without a GPU.

A booking of GPU nodes is lost to a job that dies at start. Before any GPU job, for each run:

* **launch** (plan time, nothing downloaded): the exact command the job runs is composed against
  verl's Hydra config and passed to ``verl.utils.config.validate_config``, as ``main_ppo`` does;
  the reward is loaded by verl's own loader (``get_custom_reward_fn``) and scores a right and a
  wrong answer; the loss plugin is imported by verl's ``import_external_libs`` and the configured
  loss is called with the actor config verl builds (``omega_conf_to_dataclass``); the token budget
  of a micro-batch holds prompt + response; no setting verl would accept and then ignore
  (``ignored_settings``), and the group filter bounded. PRIME commands go through verl 0.4.1 (``prime_check``).
* **model** (once downloaded): every vLLM engine the model will be started in (training rollout,
  evaluation, power sampling) fits its ``config.json`` and tokenizer: context, tensor-parallel
  size, prompt format (``prompt_format.engine_problems``). Each job's preflight checks its own
  engine: the run's (rollout), ``preflight_eval`` (evaluation), ``preflight_power``.
* **data** (once prepared): verl's own ``HFModelConfig`` loads the model's tokenizer with the recorded
  template as a worker would, and the train and validation parquet go through verl's ``RLHFDataset``;
  validation ``data_source`` values must name the benchmarks (verl names its metrics after them).

Each check returns problems as sentences; none raises. ``python -m entropy_rl.paper.preflight`` runs
them for a whole scale of ``config.yaml``; the ``preflight`` rule runs them per run before its GPU job.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import math
import os
import sys
import time
from functools import cache
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from ..core import modules
from ..core import spec as run_spec
from . import launch, reward_launch

# One right and one wrong answer per reward style the paper's data use: the reward must tell them apart.
REWARD_PROBES = {
    "rule": ("2", "1 + 1 = 2, so the answer is \\boxed{2}.", "The answer is \\boxed{3}."),
    "code:asserts": (
        json.dumps(["assert add(1, 2) == 3"]),
        "```python\ndef add(a, b):\n    return a + b\n```",
        "```python\ndef add(a, b):\n    return a - b\n```",
    ),
}
# Rows of a training set fed through verl's RLHFDataset (the columns and data_source are checked on all rows).
DATASET_SAMPLE_ROWS = 64


def _problem(where: str, error: BaseException) -> str:
    """One line: where, the exception's type and its whole message (verl's are often several lines)."""
    text = " ".join(str(error).split())
    cause = error.__cause__ or error.__context__
    if cause is not None:  # verl's loaders wrap the error that says what is wrong
        text += f" (caused by {type(cause).__name__}: {' '.join(str(cause).split())})"
    return f"{where}: {type(error).__name__}: {text[:800]}"


@cache
def _verl_config_dir() -> str:
    import verl

    return os.path.join(os.path.dirname(verl.__file__), "trainer", "config")


def compose(overrides: list[str]):
    """verl's ``ppo_trainer`` config with the command's overrides, as ``main_ppo``'s Hydra entry builds it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=_verl_config_dir(), version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=overrides)


def bound_command(scale_cfg: dict, run: str, results: str = "results") -> list[str]:
    return launch.bind(reward_launch.verl_command(scale_cfg, run), results)  # train.smk's command, bound


# ---- launch: plan time ------------------------------------------------------------------------


def launch_problems(scale_cfg: dict, run: str, results: str = "results") -> list[str]:
    """The run's exact verl command through verl's validation, reward loader and loss plugin."""
    return command_launch_problems(run, bound_command(scale_cfg, run, results), run_spec.resolve_run(scale_cfg, run))


def command_launch_problems(run: str, bound: list[str], spec: dict) -> list[str]:
    return prime_problems(run, bound) if spec["algorithm"] == "prime" else command_problems(bound, spec)


# Modules whose code the launch checks run (besides verl's): a change to one invalidates a passed check
# (launch_key). verl loads the plugin and the reward by name and PRIME's main is launched with -m, so every
# trainer's (launch.TRAINER_MODULES) is named here besides what this module imports.
LAUNCH_CODE = modules.closure(__name__, *(m for trainer in launch.TRAINER_MODULES.values() for m in trainer))


def launch_key(scale_cfg: dict, run: str) -> str:
    """What a passed launch check depends on: the exact command, the verl versions it ran on, our code."""
    from importlib import metadata

    from . import prime_check

    digest = hashlib.sha256(json.dumps([reward_launch.verl_command(scale_cfg, run), metadata.version("verl"), prime_check.PRIME_VERL]).encode())
    for name in LAUNCH_CODE:
        digest.update(name.encode() + b"\0" + modules.source(name).read_bytes())
    return digest.hexdigest()


def launch_problems_cached(scale_cfg: dict, run: str, cache_dir: str | Path) -> list[str]:
    """``launch_problems``, skipped for a command that passed before with the same verl and code (a
    paper-scale plan would otherwise import verl and check every run at each invocation)."""
    passed = Path(cache_dir) / launch_key(scale_cfg, run)
    if passed.exists():
        return []
    problems = launch_problems(scale_cfg, run)
    if not problems:
        passed.parent.mkdir(parents=True, exist_ok=True)
        passed.write_text(f"{run}\n")
    return problems


def prime_problems(run: str, command: list[str]) -> list[str]:
    """PRIME runs on its own verl (``prime_check.PRIME_VERL``): checked by that verl's code, here when
    it is the importable one (the prime image), else in a child over ``envs/install-prime-check.sh``'s copy."""
    import verl

    from . import prime_check

    if verl.__version__ == prime_check.PRIME_VERL:
        return prime_check.problems(command[3:])[0]
    try:
        return prime_check.check_commands({run: command})[run]["problems"]
    except (FileNotFoundError, RuntimeError) as error:
        return [_problem(f"PRIME check on verl {prime_check.PRIME_VERL}", error)]


def command_problems(command: list[str], spec: dict) -> list[str]:
    """One ``main_ppo`` command (as the job runs it) through verl's composition, validation and loaders."""
    try:
        cfg = compose(command[3:])
    except Exception as error:  # an unknown key or a malformed value
        return [_problem("compose", error)]
    problems = []
    try:
        from verl.trainer.ppo.utils import need_critic, need_reference_policy
        from verl.utils.config import validate_config

        with contextlib.redirect_stdout(io.StringIO()):  # its "all checks passed" line, once per run
            validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    except Exception as error:
        problems.append(_problem("verl validate_config", error))
    # verl checks the token budget only when it packs the first micro-batch, on the GPU nodes
    # (verl/utils/seqlen_balancing.py, rearrange_micro_batches: "max_token_len must be >= max_seq_len").
    longest = cfg.data.max_prompt_length + cfg.data.max_response_length
    actor = cfg.actor_rollout_ref.actor
    if actor.use_dynamic_bsz and actor.ppo_max_token_len_per_gpu < longest:
        problems.append(f"actor.ppo_max_token_len_per_gpu {actor.ppo_max_token_len_per_gpu} is under prompt + response"
                        f" ({longest}): verl's rearrange_micro_batches would stop at the first update")  # fmt: skip
    if not cfg.trainer.use_v1:
        problems.append("trainer.use_v1 is false: only verl's V1 trainer applies algorithm.filter_groups")
    if cfg.algorithm.filter_groups.enable != spec["filter_groups"]:
        problems.append(f"algorithm.filter_groups.enable is {cfg.algorithm.filter_groups.enable}, the run says {spec['filter_groups']}")
    # verl accepts these and, at best, warns on the GPU nodes; unbounded, a step whose groups are all alike never ends.
    from omegaconf import OmegaConf

    from . import ignored_settings

    problems += ignored_settings.problems(cfg)
    if cfg.algorithm.filter_groups.enable and not OmegaConf.select(cfg, launch.GEN_BATCHES_KEY, default=0):
        problems.append(f"{launch.GEN_BATCHES_KEY} is unset or 0: with the group filter on, a step whose groups are all"
                        " right or all wrong would generate without end (verl_plugin.GenerationBound)")  # fmt: skip
    problems += reward_problems(cfg, spec)
    problems += loss_problems(cfg)
    problems += trainer_problems(cfg)
    return problems


def reward_problems(cfg, spec: dict) -> list[str]:
    """Load the reward as verl does and score one right and one wrong answer of the run's style."""
    try:
        from verl.trainer.ppo.reward import get_custom_reward_fn

        score = get_custom_reward_fn(cfg)
    except Exception as error:
        return [_problem("verl get_custom_reward_fn", error)]
    if score is None:
        return ["reward.custom_reward_function.path is unset: verl would fall back to its own scorer"]
    style = "code:asserts" if str(spec.get("train_data", "")).startswith("code") else "rule"
    truth, right, wrong = REWARD_PROBES[style]
    try:
        scores = [score("preflight", answer, truth, extra_info={"style": style}) for answer in (right, wrong)]
    except Exception as error:
        return [_problem("reward compute_score", error)]
    if scores != [1.0, 0.0]:
        return [f"reward ({style}) scored a right and a wrong answer {scores}, expected [1.0, 0.0]"]
    return reward_launch.random_reward_problems(score, cfg)  # the control's draws, for its runs


def loss_problems(cfg) -> list[str]:
    """Import the plugin as verl's workers do and call the configured loss with verl's own actor config."""
    import torch
    from verl.trainer.ppo import core_algos
    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.import_utils import import_external_libs

    actor = cfg.actor_rollout_ref.actor
    try:
        import_external_libs(cfg.actor_rollout_ref.model.external_lib)
        loss_fn = core_algos.get_policy_loss_fn(actor.policy_loss.loss_mode)
        actor_cfg = omega_conf_to_dataclass(actor)
        g = torch.Generator().manual_seed(0)
        old = -torch.rand(4, 16, generator=g) * 3
        new, adv = old + 0.1 * torch.randn(4, 16, generator=g), torch.randn(4, 16, generator=g)
        mask = torch.ones(4, 16)
        loss, metrics = loss_fn(old_log_prob=old, log_prob=new, advantages=adv, response_mask=mask,
                                loss_agg_mode=actor_cfg.loss_agg_mode, config=actor_cfg)  # fmt: skip
    except Exception as error:
        return [_problem(f"loss {actor.policy_loss.loss_mode}", error)]
    problems = [] if math.isfinite(float(loss)) else [f"loss {actor.policy_loss.loss_mode} is {float(loss)}"]
    if "actor/response_tokens" not in metrics:
        problems.append(f"loss {actor.policy_loss.loss_mode} logs no token counts (actor/response_tokens): not the plugin's")
    return problems


def trainer_problems(cfg) -> list[str]:
    """The V1 trainer the command names, looked up in verl's registry after importing the modules the
    launch environment names, as ``import verl`` does in the Ray actor that builds the trainer."""
    from verl.trainer.ppo.v1 import get_trainer_cls
    from verl.utils.import_utils import import_external_libs

    try:
        import_external_libs(launch.VERL_ENV["VERL_USE_EXTERNAL_MODULES"].split(","))
        trainer_cls = get_trainer_cls(cfg.trainer.v1.trainer_mode)
    except Exception as error:
        return [_problem(f"trainer {cfg.trainer.v1.trainer_mode}", error)]
    if trainer_cls.__module__ != launch.PLUGIN_MODULE:
        return [f"trainer {cfg.trainer.v1.trainer_mode} is {trainer_cls.__qualname__}: it logs none of the paper's measures"]
    return []


# ---- model: once downloaded -------------------------------------------------------------------


# The engines a model is started in, by the job that starts it. Each job's preflight checks its own, from the resolved
# values only (the run's response cap, the evaluation's length), so a setting that changes no engine's values, or only
# another job's (eval.max_new_tokens: the evaluation's context), reruns no preflight of the job, nor the job after it.
ENGINE_KINDS = ("rollout", "evaluate", "power")


def run_engine(scale_cfg: dict, run: str, kind: str) -> dict:
    """The vLLM engine one of a run's jobs starts: its ``rollout`` in training, or its ``evaluate``."""
    spec = run_spec.resolve_run(scale_cfg, run)
    length = spec["max_response_length"] if kind == "rollout" else run_spec.eval_max_new_tokens(scale_cfg, run)
    entry = scale_cfg["models"][spec["model"]]
    return {"job": f"train {run} (rollout)" if kind == "rollout" else f"evaluate {run}", "tensor_parallel": entry["tensor_parallel"],
            "max_model_len": scale_cfg["data"]["max_prompt_length"] + length, "template": entry.get("chat_template", "tokenizer")}  # fmt: skip


def engines(scale_cfg: dict, model: str, kinds=ENGINE_KINDS) -> list[dict]:
    """Every vLLM engine of ``kinds`` the model's jobs start: one rollout per run, evaluation, power sampling."""
    runs = sorted(r for r, v in scale_cfg["runs"].items() if v["model"] == model)
    found = [run_engine(scale_cfg, run, kind) for run in runs for kind in ("rollout", "evaluate") if kind in kinds]
    power, entry = scale_cfg.get("power_sampling"), scale_cfg["models"][model]
    if "power" in kinds and power and power["model"] == model:
        found.append({"job": "power_sample", "tensor_parallel": entry["tensor_parallel"], "template": entry.get("chat_template", "tokenizer"),
                      "max_model_len": scale_cfg["data"]["max_prompt_length"] + power["max_new_tokens"] + 1})  # fmt: skip
    return found


def engine_problems(model_dir: str | Path, engines_: list[dict], tokenizer_dir: str | Path | None = "") -> list[str]:
    """The downloaded model against each engine it will be started in (its tokenizer files are in ``model_dir``
    unless ``tokenizer_dir`` says otherwise; ``None`` skips the tokenizer checks)."""
    from . import prompt_format

    model_dir = Path(model_dir)
    try:
        hf_config = json.loads((model_dir / "config.json").read_text())
    except (OSError, ValueError) as error:
        return [_problem(f"{model_dir}/config.json", error)]
    problems = []
    for engine in engines_:
        found = prompt_format.engine_problems(hf_config, engine["tensor_parallel"], engine["max_model_len"], engine["template"],
                                              model_dir if tokenizer_dir == "" else tokenizer_dir)  # fmt: skip
        problems += [f"{engine['job']}: {p}" for p in found if f"{engine['job']}: {p}" not in problems]
    return problems


def model_problems(scale_cfg: dict, model: str, model_dir: str | Path, tokenizer_dir: str | Path | None = "",
                   kinds=ENGINE_KINDS) -> list[str]:  # fmt: skip
    """The downloaded model against every engine of ``kinds`` the scale starts it in."""
    return engine_problems(model_dir, engines(scale_cfg, model, kinds), tokenizer_dir)


# ---- data: once prepared ----------------------------------------------------------------------


def data_problems(cfg, benchmarks: list[str]) -> list[str]:
    """The run's parquet as verl reads it: every row's columns, validation sources, and a sample
    through verl's RLHFDataset (its chat template and overlong-prompt filter) with the model's tokenizer."""
    problems = []
    key = cfg.data.prompt_key
    for kind, path in (("train", cfg.data.train_files), ("validation", cfg.data.val_files)):
        try:
            columns = set(pq.read_schema(path).names)
        except Exception as error:
            problems.append(_problem(f"{kind} {path}", error))
            continue
        missing = {key, "data_source", "reward_model"} - columns
        if missing:
            problems.append(f"{kind} {path}: no column {sorted(missing)} (verl reads {key!r}, data_source, reward_model)")
    if problems:
        return problems
    sources = set(pd.read_parquet(cfg.data.val_files, columns=["data_source"])["data_source"])
    if sources != set(benchmarks):
        problems.append(f"validation data_source values {sorted(sources)} are not the benchmarks {sorted(benchmarks)}"
                        " (verl names its validation metrics after them)")  # fmt: skip
    return problems + dataset_problems(cfg)


def dataset_problems(cfg) -> list[str]:
    """A sample of each file through verl's RLHFDataset with the tokenizer verl's worker loads."""
    import tempfile

    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.dataset.rl_dataset import RLHFDataset
    from verl.workers.config import HFModelConfig

    try:
        model = omega_conf_to_dataclass(cfg.actor_rollout_ref.model, HFModelConfig)
    except Exception as error:
        return [_problem("verl HFModelConfig", error)]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, path in (("train", cfg.data.train_files), ("validation", cfg.data.val_files)):
            sample = os.path.join(tmp, f"{kind}.parquet")
            pq.write_table(pq.ParquetFile(path).read_row_group(0).slice(0, DATASET_SAMPLE_ROWS), sample)
            try:
                dataset = RLHFDataset(data_files=[sample], tokenizer=model.tokenizer, config=cfg.data, processor=None)
                if len(dataset) == 0:
                    problems.append(f"{kind} {path}: verl's dataset keeps none of the first {DATASET_SAMPLE_ROWS} rows"
                                    f" (prompts over data.max_prompt_length={cfg.data.max_prompt_length} tokens are dropped)")  # fmt: skip
                else:
                    dataset[0]
            except Exception as error:
                problems.append(_problem(f"verl RLHFDataset on {kind} {path}", error))
    return problems


# ---- one run, and the command line ------------------------------------------------------------


def stages(spec: dict, results: str = "results") -> list[str]:
    """The parts of a run's preflight that what exists now allows: launch always, model and data once present."""
    model_dir = Path(results, "models", spec["model"])
    data = [Path(results, "data", "train", f"{spec['train_data']}.parquet"), Path(results, "data", "benchmarks", "validation.parquet")]
    found = ["launch"]
    if (model_dir / "config.json").exists():
        found.append("model")
        if spec["algorithm"] != "prime" and all(p.exists() for p in data):
            found.append("data")
    return found


def training_problems(run: str, command: list[str], spec: dict, rollout: dict, benchmarks: list[str], results: str = "results") -> list[str]:
    """Everything checkable for one run's training with what exists now (``stages``), from exactly what the training
    job runs: its recorded command and spec (train_verl's params), its rollout engine and the benchmarks it validates on."""
    checks = stages(spec, results)
    bound = launch.bind(command, results)
    problems = command_launch_problems(run, bound, spec)
    if "model" in checks:
        problems += engine_problems(Path(results, "models", spec["model"]), [rollout])
    if "data" in checks and not problems:
        problems += data_problems(compose(bound[3:]), benchmarks)
    return problems


def run_problems(scale_cfg: dict, run: str, results: str = "results", kinds=("rollout",)) -> list[str]:
    """``training_problems`` of a run of ``scale_cfg``, and with ``evaluate`` in ``kinds`` its evaluation's engine
    (which the ``preflight_eval`` rule checks apart)."""
    spec = run_spec.resolve_run(scale_cfg, run)
    command = reward_launch.verl_command(scale_cfg, run)
    problems = training_problems(run, command, spec, run_engine(scale_cfg, run, "rollout"), sorted(scale_cfg["data"]["benchmarks"]), results)
    if "evaluate" in kinds and "model" in stages(spec, results):
        problems += engine_problems(Path(results, "models", spec["model"]), [run_engine(scale_cfg, run, "evaluate")])
    return problems


def main(argv: list[str] | None = None) -> int:
    import yaml

    parser = argparse.ArgumentParser(prog="python -m entropy_rl.paper.preflight", description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="*", help="runs to check (default: every run of the scale)")
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--results", default="results")
    args = parser.parse_args(argv)
    scale_cfg = yaml.safe_load(Path(args.config).read_text())[args.scale]
    failed = 0
    for run in args.runs or sorted(scale_cfg["runs"]):
        start = time.perf_counter()
        problems = run_problems(scale_cfg, run, args.results, kinds=("rollout", "evaluate"))
        failed += bool(problems)
        checked = ", ".join(stages(run_spec.resolve_run(scale_cfg, run), args.results))
        print(f"{'FAIL' if problems else 'ok  '} {run} ({checked}; {time.perf_counter() - start:.1f} s)")
        for p in problems:
            print(f"     - {p}")
    print(f"preflight: {failed} of {len(args.runs or scale_cfg['runs'])} runs with problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
