"""A run's command with its own reward: the one entry to a run's recorded command (train.smk, preflight.smk, the
preflight, the pilot's speed job).

``run_command`` builds a command from the run resolved once and the reward given to it. The reward is chosen here:
the verifiable one (``core.reward``), or, for a run whose loss selects it (``core.run.Run.random_reward``), the
random-reward control with its settings. This module is not in any training job's code stamp (the recorded command
carries what it decides), so the control's reward outdates no other run; the control's runs get their own stamp
(pipeline.plan's ``train_code``), which adds that reward's module to the verl trainer's.
"""

from __future__ import annotations

from ..core import modules
from ..core.run import RANDOM_REWARD, Run
from ..core.scale import Scale
from . import launch, run_command, verl_names

RANDOM_REWARD_MODULE = "entropy_rl.core.random_reward"
# The job around every trainer (workflow/scripts/train_verl.py): the launch, the resumption and the log's translation
# into the metrics contract. A run's code stamp holds it with its trainer's modules (pipeline.stamps.trainer_code).
TRAINING_JOB = "paper.train_job"
# verl binds these to the reward function (verl.trainer.ppo.reward.get_custom_reward_fn); its config has no such
# key, hence Hydra's "+".
REWARD_KWARGS = "+reward.custom_reward_function.reward_kwargs"


def reward_module(run: Run) -> str:
    """The module verl loads the run's reward from."""
    return RANDOM_REWARD_MODULE if run.random_reward else verl_names.REWARD_MODULE


def trainer_modules(run: Run) -> tuple[str, ...]:
    """The code that shapes the run's trajectory (``launch.TRAINER_MODULES`` of its trainer), with its own reward's."""
    base = launch.TRAINER_MODULES[run.trainer]
    return base if reward_module(run) in base else (*base, reward_module(run))


def stamp_key(run: Run) -> str:
    """The name of the run's code stamp: its trainer's (``train_verl``, ``train_prime``) for a verifiable reward,
    ``train_verl_random_reward`` for the control."""
    key = f"train_{run.trainer}"
    return key if reward_module(run) == verl_names.REWARD_MODULE else f"{key}_{RANDOM_REWARD}_reward"


def reward_overrides(run: Run, train_sets: dict) -> list[str]:
    """The random reward's settings for verl: the run's seed; the data sources it draws for, the parts of the run's
    training set (the validation benchmarks stay graded); and the behaviour hash of its code, which train_job.main's
    checkpoint fingerprint (the run's settings and the command, with ``launch.TRAINER_MODULES``' code only) then
    covers."""
    parts = train_sets[run.train_data]
    return [
        f"{REWARD_KWARGS}.seed={run.seed}",
        f"{REWARD_KWARGS}.random_sources=[{','.join(parts)}]",
        f"{REWARD_KWARGS}.code='{modules.behaviour_hash(RANDOM_REWARD_MODULE)}'",  # quoted: a hex digest can read as a float
    ]


def reward(run: Run, train_sets: dict) -> run_command.Reward:
    """The run's reward: the random-reward control's, with its settings, for a run whose loss selects it; else the
    verifiable one."""
    if not run.random_reward:
        return run_command.VERIFIABLE
    return run_command.Reward(RANDOM_REWARD_MODULE, tuple(reward_overrides(run, train_sets)))


def verl_command(scale: Scale, run_id: str, root: str = verl_names.RESULTS_PLACEHOLDER) -> list[str]:
    """The run's command (``run_command.command``) from the scale resolved once, with its own reward."""
    run = scale.runs[run_id]
    train_sets = scale.config["data"].get("train_sets", {})
    return run_command.command(run, run_command.launch_of(scale, run_id), reward(run, train_sets), root)


# Responses a random-reward run's reward is probed with, on a training row: their draws must not all agree.
PROBES = 64


def random_reward_problems(score, cfg) -> list[str]:
    """For a command that loads the random reward (the preflight's reward check, after the right and wrong answers of
    a row it grades): on a row of a training part, ``PROBES`` responses draw both rewards, and a response scored twice
    draws the same. Nothing to check for another reward."""
    reward_fn = cfg.reward.custom_reward_function
    if reward_fn.path != f"pkg://{RANDOM_REWARD_MODULE}":
        return []
    sources = list((reward_fn.get("reward_kwargs") or {}).get("random_sources") or [])
    if not sources:
        return [f"{REWARD_KWARGS}.random_sources names no training part: every row would be graded, none drawn"]
    source = sources[0]
    draws = [score(source, f"The answer is \\boxed{{{k}}}.", "0", extra_info={"index": 0}) for k in range(PROBES)]
    again = score(source, "The answer is \\boxed{0}.", "0", extra_info={"index": 0})
    problems = (
        [] if set(draws) == {0.0, 1.0} else [f"random reward drew only {sorted(set(draws))} for {PROBES} responses"]
    )
    return problems + ([] if again == draws[0] else ["random reward drew differently for the same response twice"])
