"""The checks of a run by verl's own code, as far as it runs without a GPU (the preflight's, ``paper.preflight``):
its exact command composed against verl's Hydra config and validated as ``main_ppo`` does, the reward loaded by
verl's loader and scoring a right and a wrong answer, the loss plugin imported by verl and its loss called with the
actor config verl builds, the V1 trainer looked up in verl's registry, the token budget of a micro-batch, the settings
verl would accept and then ignore (``ignored_settings``), the group filter bounded; PRIME's commands on verl 0.4.1
(``prime_check``); and the run's parquet through verl's ``RLHFDataset`` with the tokenizer its worker loads.

Each check returns problems as sentences; none raises.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
from functools import cache

import pandas as pd
import pyarrow.parquet as pq

from ...core.run import Run
from .. import launch, reward_launch, verl_names

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


def problem(where: str, error: BaseException) -> str:
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
        return [problem(f"PRIME check on verl {prime_check.PRIME_VERL}", error)]


def command_problems(command: list[str], run: Run) -> list[str]:
    """One ``main_ppo`` command (as the job runs it) through verl's composition, validation and loaders."""
    try:
        cfg = compose(command[3:])
    except Exception as error:  # an unknown key or a malformed value
        return [problem("compose", error)]
    problems = []
    try:
        from verl.trainer.ppo.utils import need_critic, need_reference_policy
        from verl.utils.config import validate_config

        with contextlib.redirect_stdout(io.StringIO()):  # its "all checks passed" line, once per run
            validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    except Exception as error:
        problems.append(problem("verl validate_config", error))
    # verl checks the token budget only when it packs the first micro-batch, on the GPU nodes
    # (verl/utils/seqlen_balancing.py, rearrange_micro_batches: "max_token_len must be >= max_seq_len").
    longest = cfg.data.max_prompt_length + cfg.data.max_response_length
    actor = cfg.actor_rollout_ref.actor
    if actor.use_dynamic_bsz and actor.ppo_max_token_len_per_gpu < longest:
        problems.append(
            f"actor.ppo_max_token_len_per_gpu {actor.ppo_max_token_len_per_gpu} is under prompt + response"
            f" ({longest}): verl's rearrange_micro_batches would stop at the first update"
        )
    if not cfg.trainer.use_v1:
        problems.append("trainer.use_v1 is false: only verl's V1 trainer applies algorithm.filter_groups")
    if cfg.algorithm.filter_groups.enable != run.filter_groups:
        problems.append(
            f"algorithm.filter_groups.enable is {cfg.algorithm.filter_groups.enable}, the run says {run.filter_groups}"
        )
    # verl accepts these and, at best, warns on the GPU nodes; unbounded, a step whose groups are all alike never ends.
    from omegaconf import OmegaConf

    from . import ignored_settings

    problems += ignored_settings.problems(cfg)
    if cfg.algorithm.filter_groups.enable and not OmegaConf.select(cfg, verl_names.GEN_BATCHES_KEY, default=0):
        problems.append(
            f"{verl_names.GEN_BATCHES_KEY} is unset or 0: with the group filter on, a step whose groups are all"
            " right or all wrong would generate without end (verl_plugin.GenerationBound)"
        )
    problems += reward_problems(cfg, run)
    problems += loss_problems(cfg)
    problems += trainer_problems(cfg)
    return problems


def reward_problems(cfg, run: Run) -> list[str]:
    """Load the reward as verl does and score one right and one wrong answer of the run's style."""
    try:
        from verl.trainer.ppo.reward import get_custom_reward_fn

        score = get_custom_reward_fn(cfg)
    except Exception as error:
        return [problem("verl get_custom_reward_fn", error)]
    if score is None:
        return ["reward.custom_reward_function.path is unset: verl would fall back to its own scorer"]
    style = "code:asserts" if (run.train_data or "").startswith("code") else "rule"
    truth, right, wrong = REWARD_PROBES[style]
    try:
        scores = [score("preflight", answer, truth, extra_info={"style": style}) for answer in (right, wrong)]
    except Exception as error:
        return [problem("reward compute_score", error)]
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
        loss, metrics = loss_fn(
            old_log_prob=old,
            log_prob=new,
            advantages=adv,
            response_mask=mask,
            loss_agg_mode=actor_cfg.loss_agg_mode,
            config=actor_cfg,
        )
    except Exception as error:
        return [problem(f"loss {actor.policy_loss.loss_mode}", error)]
    problems = [] if math.isfinite(float(loss)) else [f"loss {actor.policy_loss.loss_mode} is {float(loss)}"]
    if "actor/response_tokens" not in metrics:
        problems.append(
            f"loss {actor.policy_loss.loss_mode} logs no token counts (actor/response_tokens): not the plugin's"
        )
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
        return [problem(f"trainer {cfg.trainer.v1.trainer_mode}", error)]
    if trainer_cls.__module__ != verl_names.PLUGIN_MODULE:
        return [
            f"trainer {cfg.trainer.v1.trainer_mode} is {trainer_cls.__qualname__}: it logs none of the paper's measures"
        ]
    return []


# ---- data: once prepared -----------------------------------------------------------------------


def data_problems(cfg, benchmarks: list[str]) -> list[str]:
    """The run's parquet as verl reads it: every row's columns, validation sources, and a sample
    through verl's RLHFDataset (its chat template and overlong-prompt filter) with the model's tokenizer."""
    problems = []
    key = cfg.data.prompt_key
    for kind, path in (("train", cfg.data.train_files), ("validation", cfg.data.val_files)):
        try:
            columns = set(pq.read_schema(path).names)
        except Exception as error:
            problems.append(problem(f"{kind} {path}", error))
            continue
        missing = {key, "data_source", "reward_model"} - columns
        if missing:
            problems.append(
                f"{kind} {path}: no column {sorted(missing)} (verl reads {key!r}, data_source, reward_model)"
            )
    if problems:
        return problems
    sources = set(pd.read_parquet(cfg.data.val_files, columns=["data_source"])["data_source"])
    if sources != set(benchmarks):
        problems.append(
            f"validation data_source values {sorted(sources)} are not the benchmarks {sorted(benchmarks)}"
            " (verl names its validation metrics after them)"
        )
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
        return [problem("verl HFModelConfig", error)]
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, path in (("train", cfg.data.train_files), ("validation", cfg.data.val_files)):
            sample = os.path.join(tmp, f"{kind}.parquet")
            pq.write_table(pq.ParquetFile(path).read_row_group(0).slice(0, DATASET_SAMPLE_ROWS), sample)
            try:
                dataset = RLHFDataset(data_files=[sample], tokenizer=model.tokenizer, config=cfg.data, processor=None)
                if len(dataset) == 0:
                    problems.append(
                        f"{kind} {path}: verl's dataset keeps none of the first {DATASET_SAMPLE_ROWS} rows"
                        f" (prompts over data.max_prompt_length={cfg.data.max_prompt_length} tokens are dropped)"
                    )
                else:
                    dataset[0]
            except Exception as error:
                problems.append(problem(f"verl RLHFDataset on {kind} {path}", error))
    return problems
