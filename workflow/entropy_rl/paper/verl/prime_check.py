"""PRIME's launch checked against the verl that runs it (verl 0.4.1), on CPU.

Why verl 0.4.1 (read from the wheels on PyPI and from the histories of verl and verl-recipe):

* No verl wheel on PyPI ships a PRIME recipe (0.1 to 0.9.1 were listed: only ``verl``, ``tests``
  and ``scripts``; the sdists have no ``recipe`` either). PRIME lives in verl's git tree
  (``recipe/prime``) up to v0.7.0 and in verl-recipe after.
* verl-recipe's PRIME (its last change 2026-01-23) runs on no verl release: it calls
  ``agg_loss(..., loss_scale_factor=)`` (verl main from 2025-12-01, after 0.6.1), generates through
  the worker group in ``rollout.mode: sync`` (vLLM SPMD, retired 2025-12-04; ``sync`` refused by
  ``RolloutConfig`` from 2025-12-28, so by 0.7.0), passes ``reward_fn=`` to ``RayPPOTrainer``
  (removed 2026-02, before 0.7.1, and before the commit its REQUIRED_VERL.txt names) and imports
  ``verl.workers.fsdp_workers`` (gone in 0.8.0).
* verl's own ``recipe/prime`` of releases 0.5.0 to 0.7.0 never sets ``response_mask``, which their
  ``dp_actor.update_policy`` requires from 0.5.0 on (KeyError at the first update).
* verl 0.4.1 and its tree's ``recipe/prime`` (tag v0.4.1, whose last PRIME fix is 2025-06-26) agree:
  its actor derives the response mask itself, and its worker, trainer and config match the recipe.

verl 0.4.1 conflicts with the main environment's verl 0.9.1, so the check runs in a child
process whose ``sys.path`` starts with a ``pip install --no-deps --target`` directory holding only
verl 0.4.1 (and setuptools for its ``pkg_resources``), reusing the main environment's torch,
Hydra, OmegaConf and Ray (envs/install-prime-check.sh). In the child:

* with the PRIME recipe importable (the prime image, or ``ENTROPY_RL_PRIME_RECIPE`` naming a folder
  that holds ``recipe/prime``): the launch's own entry, ``entropy_rl.paper.prime_main``, is run as the
  command runs it (Hydra's command line, the recipe's ``prime_trainer`` config, in a working
  directory without a ``verl/`` folder), and the recipe's ``main_task`` builds its worker mapping,
  reward managers and the trainer (``RayPRIMETrainer`` as ``prime_checkpoints`` extends it), whose ``__init__``
  runs verl's ``_validate_config``;
  it stops where the data would be loaded (no tokenizer, data or GPU here);
* without it (CI: the recipe is not on PyPI): the command's overrides are composed against verl
  0.4.1's own ``ppo_trainer`` config, the one the recipe's config extends, with the keys only the
  recipe defines (``RECIPE_KEYS``) appended, and verl's ``RayPPOTrainer.__init__`` runs
  ``_validate_config`` with PRIME's worker roles.

Both then import the command's ``external_lib`` as verl's workers do, look its loss mode up as
0.4.1's actor does, and open verl's ``Tracking`` with the command's loggers, as the trainer's
``fit`` does. ``problems`` returns what failed, one line each; no line means the command passed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ... import PROJECT_DIR
from ...core import algorithms

ROOT = PROJECT_DIR
PRIME_VERL = "0.4.1"
# Keys our PRIME overrides set that verl's ppo_trainer config lacks and the recipe's prime_trainer
# adds (the recipe check asserts both facts, so this list cannot drift where the recipe is at hand).
RECIPE_KEYS = (
    "reward_model.model.beta_train",
    "reward_model.model.optim.lr",
    "data.filter_accuracy",
    "data.accuracy_lower_bound",
    "data.accuracy_upper_bound",
    "data.oversample_factor",
)
# The recipe enables its implicit PRM by default; verl's base config does not.
RECIPE_DEFAULTS = ("reward_model.enable=true",)


def default_site() -> Path:
    return Path(os.environ.get("ENTROPY_RL_PRIME_SITE", ROOT / ".venv" / "prime-site"))


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


# ---------------------------------------------------------------- in the child (verl 0.4.1)
def _after_composition(cfg, scratch: str) -> list[str]:
    """What the workers and the trainer's fit do first with the config, done here."""
    out = []
    from verl.trainer.ppo import core_algos
    from verl.utils.import_utils import import_external_libs
    from verl.utils.tracking import Tracking

    lib = cfg.actor_rollout_ref.model.get("external_lib")
    try:
        import_external_libs(lib)  # what every verl worker does with model.external_lib
    except Exception as err:  # noqa: BLE001 - reported, not raised
        out.append(f"external_lib {lib!r} does not import under verl {PRIME_VERL}: {type(err).__name__}: {err}")
    mode = cfg.actor_rollout_ref.actor.policy_loss.loss_mode
    if mode != "vanilla" and mode not in core_algos.POLICY_LOSS_REGISTRY:  # dp_actor.update_policy's branch
        out.append(f"policy loss {mode!r} is neither verl 0.4.1's built-in 'vanilla' nor registered")
    os.environ["TENSORBOARD_DIR"] = os.path.join(scratch, "tensorboard")
    try:
        logger = Tracking(
            project_name=cfg.trainer.project_name,
            experiment_name=cfg.trainer.experiment_name,
            default_backend=list(cfg.trainer.logger),
            config=None,
        )
        logger.log({"check": 1.0}, step=0)
        if "tensorboard" in logger.logger:
            logger.logger["tensorboard"].finish()
    except Exception as err:  # noqa: BLE001
        out.append(f"trainer.logger {list(cfg.trainer.logger)}: {type(err).__name__}: {err}")
    return out


def _through_verl(overrides: list[str], scratch: str) -> tuple[list[str], dict]:
    """Without the recipe: verl 0.4.1's ppo_trainer config and RayPPOTrainer's validation."""
    import ray
    import verl
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf
    from verl.trainer.ppo import ray_trainer
    from verl.trainer.ppo.ray_trainer import ResourcePoolManager, Role
    from verl.workers.fsdp_workers import ActorRolloutRefWorker, RewardModelWorker

    job = [("+" + o if _key(o) in RECIPE_KEYS else o) for o in overrides if not _key(o).startswith("hydra.")]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(
            config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer", "config"), version_base=None
        ):
            cfg = compose(config_name="ppo_trainer", overrides=[*job, *RECIPE_DEFAULTS])
    except Exception as err:  # noqa: BLE001
        return [f"does not compose against verl {PRIME_VERL}'s ppo_trainer: {err} ({err.__cause__})"], {}
    OmegaConf.resolve(cfg)  # as the recipe's main_task does
    # The recipe's worker mapping: the actor-rollout, the implicit PRM, and a reference policy only with KL.
    mapping = {Role.ActorRollout: ray.remote(ActorRolloutRefWorker), Role.RewardModel: ray.remote(RewardModelWorker)}
    if cfg.algorithm.use_kl_in_reward or cfg.actor_rollout_ref.actor.use_kl_loss:
        mapping[Role.RefPolicy] = ray.remote(ActorRolloutRefWorker)
    pool = {"global_pool": [cfg.trainer.n_gpus_per_node] * cfg.trainer.nnodes}
    reached = {}
    original = ray_trainer.RayPPOTrainer._create_dataloader
    ray_trainer.RayPPOTrainer._create_dataloader = lambda self, *a, **k: reached.setdefault("validated", True)
    try:
        ray_trainer.RayPPOTrainer(
            config=cfg,
            tokenizer=None,
            role_worker_mapping=mapping,
            resource_pool_manager=ResourcePoolManager(pool, {r: "global_pool" for r in mapping}),
            device_name=cfg.trainer.device,
        )
    except Exception as err:  # noqa: BLE001
        return [f"verl {PRIME_VERL}'s RayPPOTrainer._validate_config: {type(err).__name__}: {err}"], {}
    finally:
        ray_trainer.RayPPOTrainer._create_dataloader = original
    if not reached:
        return ["RayPPOTrainer.__init__ ended before its data loading"], {}
    return _after_composition(cfg, scratch), {"config": OmegaConf.to_container(cfg)}


def _through_recipe(overrides: list[str], scratch: str) -> tuple[list[str], dict]:
    """With the recipe: the launch's entry under Hydra, and the recipe's main_task up to the data."""
    import verl.utils
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf
    from recipe.prime import main_prime, prime_ray_trainer

    from ...core import reward
    from .. import prime_main

    seen = {}
    trainer_cls = prime_ray_trainer.RayPRIMETrainer

    def stop_at_data(self, *args, **kwargs):  # RayPRIMETrainer.__init__ has validated by now
        seen.update(
            config=self.config,
            compute_score=self.reward_fn.compute_score,
            use_rm=self.use_rm,
            resumable=getattr(type(self), "resumable", False),
        )

    def in_process(config, compute_score=None):  # run_prime without Ray: its main_task, here
        main_prime.main_task._function(config, compute_score)

    patched = [
        (trainer_cls, "_create_dataloader", stop_at_data),
        (trainer_cls, "init_workers", lambda self: None),
        (trainer_cls, "fit", lambda self: None),
        (main_prime, "run_prime", in_process),
        (verl.utils, "hf_tokenizer", lambda *a, **k: None),
    ]
    saved = [(obj, name, getattr(obj, name)) for obj, name, _ in patched]
    for obj, name, value in patched:
        setattr(obj, name, value)
    argv, cwd = sys.argv, os.getcwd()
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises the job's exception instead of exiting
    workdir = tempfile.mkdtemp(dir=scratch)  # no verl/ folder here, as in the workflow's working directory
    try:
        GlobalHydra.instance().clear()
        sys.argv = ["entropy_rl.paper.prime_main", *overrides]
        os.chdir(workdir)
        prime_main.main()
    except BaseException as err:  # noqa: BLE001 - SystemExit included: Hydra's own errors
        return [
            f"python -m entropy_rl.paper.prime_main failed under verl {PRIME_VERL}: {type(err).__name__}: {err}"
        ], {}
    finally:
        os.chdir(cwd)
        sys.argv = argv
        for obj, name, value in saved:
            setattr(obj, name, value)
    if not seen:
        return ["the recipe's main_task ended before RayPRIMETrainer loaded its data"], {}
    cfg, out = seen["config"], []
    if seen["compute_score"] is not reward.compute_score:
        out.append(
            f"PRIME's reward managers score with {seen['compute_score']!r}, not entropy_rl.core.reward.compute_score"
        )
    if not seen["use_rm"]:
        out.append("PRIME's implicit PRM is not enabled (reward_model.enable)")
    if not seen["resumable"]:
        out.append(
            "PRIME's trainer is the recipe's own: on torch >= 2.6 it cannot load its own save (prime_checkpoints)"
        )
    for key in RECIPE_KEYS:  # keeps RECIPE_KEYS true to the recipe
        if OmegaConf.select(cfg, key) is None:
            out.append(f"{key} is in RECIPE_KEYS but the recipe's config has no such key")
    return out + _after_composition(cfg, scratch), {"config": OmegaConf.to_container(cfg)}


def problems(
    overrides: list[str], scratch: str | None = None, with_recipe: bool | None = None
) -> tuple[list[str], dict]:
    """Check one PRIME command's overrides; run where verl 0.4.1 is the importable verl."""
    import verl

    if verl.__version__ != PRIME_VERL:
        return [f"verl {verl.__version__} is importable here, not {PRIME_VERL}"], {}
    if with_recipe is None:
        try:
            import recipe.prime.main_prime  # noqa: F401
        except ImportError:
            with_recipe = False
        else:
            with_recipe = True
    scratch = scratch or tempfile.mkdtemp(prefix="prime-check-")
    found, info = (_through_recipe if with_recipe else _through_verl)(list(overrides), scratch)
    return found, {**info, "tier": "recipe" if with_recipe else "verl", "verl": verl.__version__}


def _child(request: Path, result: Path) -> int:
    """Check every command of ``request`` ({run: overrides}); write {run: {problems, tier, verl}}."""
    runs = json.loads(request.read_text())
    scratch = tempfile.mkdtemp(prefix="prime-check-")
    out = {}
    for run, overrides in runs.items():
        found, info = problems(overrides, scratch)
        config = info.pop("config", {})
        out[run] = {"problems": found, **info, "values": _values(config)}
    result.write_text(json.dumps(out, indent=1, default=str))
    return 0


def _values(config: dict) -> dict:
    """The composed values the tests compare with the run's settings."""

    def get(path):
        node = config
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    keys = [
        "algorithm.adv_estimator",
        "data.train_batch_size",
        "data.seed",
        "data.filter_accuracy",
        "data.accuracy_lower_bound",
        "data.accuracy_upper_bound",
        "actor_rollout_ref.rollout.n",
        "actor_rollout_ref.actor.optim.lr",
        "actor_rollout_ref.actor.grad_clip",
        "actor_rollout_ref.actor.entropy_coeff",
        "actor_rollout_ref.actor.policy_loss.loss_mode",
        "actor_rollout_ref.actor.use_dynamic_bsz",
        "reward_model.enable",
        "reward_model.model.beta_train",
        "reward_model.model.optim.lr",
        "reward_model.use_dynamic_bsz",
        "trainer.logger",
        "trainer.total_training_steps",
        "trainer.test_freq",
    ]
    return {k: get(k) for k in keys}


# ---------------------------------------------------------------- in the parent (any environment)
def check_commands(
    commands: dict[str, list[str]], site: Path | None = None, recipe: str | None = None, timeout_s: float = 600
) -> dict:
    """Run the check for {run: command} in a child whose verl is the one in ``site``."""
    site = Path(site or default_site())
    if not (site / "verl" / "__init__.py").is_file():
        raise FileNotFoundError(f"no verl {PRIME_VERL} under {site}: run envs/install-prime-check.sh")
    recipe = recipe if recipe is not None else os.environ.get("ENTROPY_RL_PRIME_RECIPE", "")
    for run, command in commands.items():
        if command[1:3] != ["-m", "entropy_rl.paper.prime_main"]:
            raise ValueError(f"{run}: not a PRIME launch: {command[:3]}")
    with tempfile.TemporaryDirectory(prefix="prime-check-") as tmp:
        request, result = Path(tmp) / "request.json", Path(tmp) / "result.json"
        request.write_text(json.dumps({run: command[3:] for run, command in commands.items()}))
        path = [p for p in [recipe, str(site), str(ROOT / "workflow"), os.environ.get("PYTHONPATH", "")] if p]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(path),
            "RAY_USAGE_STATS_ENABLED": "0",
            "WANDB_MODE": "disabled",
        }
        proc = subprocess.run(
            [sys.executable, "-m", "entropy_rl.paper.verl.prime_check", "--child", str(request), str(result)],
            check=False,
            env=env,
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if proc.returncode != 0 or not result.exists():
            raise RuntimeError(f"the PRIME check's child failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return json.loads(result.read_text())


def prime_commands(
    config_path: Path | str = ROOT / "config.yaml", scale: str = "paper", results: str | None = None
) -> dict:
    """{run: command} for every PRIME run of the scale's matrix, bound to ``results``."""
    import yaml

    from ...core.scale import build
    from .. import launch, reward_launch

    resolved = build(scale, yaml.safe_load(Path(config_path).read_text())[scale])
    results = results or os.path.join(tempfile.gettempdir(), "prime-check-results")
    runs = [run for run, r in resolved.runs.items() if r.trainer == algorithms.PRIME]
    return {run: launch.bind(reward_launch.verl_command(resolved, run), results) for run in runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m entropy_rl.paper.verl.prime_check", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--config", default=str(ROOT / "config.yaml"))
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--site", default=None, help="the verl 0.4.1 --target directory (default: .venv/prime-site)")
    parser.add_argument("--child", nargs=2, metavar=("REQUEST", "RESULT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(Path(args.child[0]), Path(args.child[1]))
    result = check_commands(prime_commands(args.config, args.scale), site=args.site)
    failed = 0
    for run, r in result.items():
        failed += bool(r["problems"])
        print(f"{run}: verl {r['verl']}, {r['tier']} check, {'ok' if not r['problems'] else 'FAILED'}")
        for line in r["problems"]:
            print(f"  - {line}")
    print(f"{len(result) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
