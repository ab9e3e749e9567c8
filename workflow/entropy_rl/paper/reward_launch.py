"""The verl command and the code of a run whose reward is not the verifiable one (the random-reward control).

``launch.verl_command`` names ``core.reward`` for every run, and launch.py is in the code stamp of every paid
training job: giving it a per-run reward would outdate them all. So a run whose spec selects another reward
(``core.random_reward.is_random``) takes ``launch.verl_command`` with its reward entries replaced here, and its own
code stamp (common.smk ``train_code``), which adds that reward's module to the verl trainer's. Every other run's
command and stamp are ``launch``'s, unchanged.
"""

from __future__ import annotations

from ..core import modules, random_reward
from ..core import spec as run_spec
from . import launch

RANDOM_REWARD_MODULE = "entropy_rl.core.random_reward"
REWARD_PATH = "reward.custom_reward_function.path="
REWARD_NAME = "reward.custom_reward_function.name="
# verl binds these to the reward function (verl.trainer.ppo.reward.get_custom_reward_fn); its config has no such
# key, hence Hydra's "+".
REWARD_KWARGS = "+reward.custom_reward_function.reward_kwargs"


def reward_module(spec: dict) -> str:
    """The module verl loads the run's reward from."""
    return RANDOM_REWARD_MODULE if random_reward.is_random(spec) else launch.REWARD_MODULE


def trainer_modules(spec: dict) -> tuple[str, ...]:
    """The code that shapes the run's trajectory (``launch.TRAINER_MODULES`` of its trainer), with its own reward's."""
    base = launch.TRAINER_MODULES[launch.trainer(spec)]
    return base if reward_module(spec) in base else (*base, reward_module(spec))


def stamp_key(spec: dict) -> str:
    """The name of the run's code stamp: its trainer's (``train_verl``, ``train_prime``) for a verifiable reward, so
    those stamps stand for the same code as before; ``train_verl_random_reward`` for the control."""
    key = f"train_{launch.trainer(spec)}"
    return key if reward_module(spec) == launch.REWARD_MODULE else f"{key}_{random_reward.RANDOM}_reward"


def reward_overrides(scale_cfg: dict, run_id: str) -> list[str]:
    """The random reward's settings for verl: the run's seed; the data sources it draws for, the parts of the run's
    training set (the validation benchmarks stay graded); and the behaviour hash of its code, which train_verl.py's
    checkpoint fingerprint (the spec and the command, with ``launch.TRAINER_MODULES``' code only) then covers."""
    spec = run_spec.resolve_run(scale_cfg, run_id)
    parts = scale_cfg["data"]["train_sets"][spec["train_data"]]
    return [
        f"{REWARD_KWARGS}.seed={spec['seed']}",
        f"{REWARD_KWARGS}.random_sources=[{','.join(parts)}]",
        f"{REWARD_KWARGS}.code='{modules.behaviour_hash(RANDOM_REWARD_MODULE)}'",  # quoted: a hex digest can read as a float
    ]


def verl_command(scale_cfg: dict, run_id: str, root: str = launch.RESULTS) -> list[str]:
    """``launch.verl_command``; for a random-reward run, its reward path replaced by this control's module and the
    module's settings after it (in place, so the scale's own ``launch.verl_overrides`` still come last)."""
    command = launch.verl_command(scale_cfg, run_id, root)
    spec = run_spec.resolve_run(scale_cfg, run_id)
    if not random_reward.is_random(spec):
        return command
    if launch.trainer(spec) != "verl":
        raise ValueError(f"run {run_id!r}: the random reward is given to verl 0.9.1's runs only, not {launch.trainer(spec)}'s")
    at = next(i for i, arg in enumerate(command) if arg.startswith(REWARD_PATH))
    if not command[at + 1].startswith(REWARD_NAME):
        raise ValueError(f"run {run_id!r}: launch.verl_command no longer names the reward function after its path")
    reward = [f"{REWARD_PATH}pkg://{RANDOM_REWARD_MODULE}", f"{REWARD_NAME}compute_score"]
    return [*command[:at], *reward, *reward_overrides(scale_cfg, run_id), *command[at + 2 :]]


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
    problems = [] if set(draws) == {0.0, 1.0} else [f"random reward drew only {sorted(set(draws))} for {PROBES} responses"]
    return problems + ([] if again == draws[0] else ["random reward drew differently for the same response twice"])
