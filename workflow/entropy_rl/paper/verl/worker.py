"""verl 0.9.1's actor worker driven outside its trainer, as the V1 trainer drives it: the class the run's trainer maps,
the batch as TransferQueue hands it over, and the ``extra_info`` of the trainer's update call.

The pilot's speed by model size (``update_speed``) and the tests of the worker on a CPU (tests/verl_cpu.py) both build
the worker this way, so what they time and what they check is the worker a run's ``main_ppo`` builds.
"""

from __future__ import annotations

import copy

# Token fields of a sample that hold floats; the others hold token ids or masks.
FLOAT_FIELDS = {"rm_scores", "old_log_probs", "advantages", "returns", "entropy", "rollout_log_probs", "log_probs"}


def actor_worker_class(cfg) -> str:
    """The class the run's V1 trainer starts on each GPU for its actor (``trainer.v1.trainer_mode``'s
    ``_init_resource_pool_mgr`` on the run's config), as ``module:qualname``."""
    from verl.trainer.ppo.v1 import get_trainer_cls

    from .. import verl_plugin  # registers the trainer, as the launch's import does

    trainer_cls = get_trainer_cls(cfg.trainer.v1.trainer_mode)
    trainer = trainer_cls.__new__(trainer_cls)  # only the mapping: no Ray, no dataset, no workers
    trainer.config = copy.deepcopy(cfg)
    trainer._init_resource_pool_mgr()
    (cls,) = [
        c.__ray_actor_class__ for role, c in trainer.role_worker_mapping.items() if role in verl_plugin.ACTOR_ROLES
    ]
    return f"{cls.__module__}:{cls.__qualname__}"


def make(worker_class: str, actor_rollout_ref: dict, role: str = "actor"):
    """``worker_class`` (``module:qualname``, as ``actor_worker_class`` names it) on the run's ``actor_rollout_ref``
    section, with ``init_model`` done, as the trainer's worker group builds it on each GPU (there with role
    actor_rollout: its rollout is vLLM's, which this process has none of)."""
    import importlib

    from omegaconf import OmegaConf

    module, qualname = worker_class.split(":")
    cls = getattr(importlib.import_module(module), qualname)
    worker = cls(config=OmegaConf.create(actor_rollout_ref), role=role)
    worker.init_model()
    return worker


def build(cfg, role: str = "actor"):
    """The run's actor worker (``actor_worker_class``) from its composed config (``make``)."""
    from omegaconf import OmegaConf

    return make(actor_worker_class(cfg), OmegaConf.to_container(cfg.actor_rollout_ref), role)


def tensordict(samples: list[dict], extra: dict | None = None):
    """A batch as verl's TransferQueue hands it to the worker: one nested (jagged) tensor per token field,
    a tensor per scalar field, a NonTensorStack per other field, and the trainer's ``extra_info`` as
    non-tensor entries. Token fields are lists; float ones are named in ``FLOAT_FIELDS``."""
    import torch
    from tensordict import NonTensorStack, TensorDict
    from verl.utils import tensordict_utils as tu

    data = {}
    for key in samples[0]:
        values = [s[key] for s in samples]
        if isinstance(values[0], list):
            dtype = torch.float32 if key in FLOAT_FIELDS else torch.int64
            rows = [torch.tensor(v, dtype=dtype) for v in values]
            data[key] = torch.nested.as_nested_tensor(rows, layout=torch.jagged)
        elif isinstance(values[0], (int, float)) and not isinstance(values[0], bool):
            data[key] = torch.tensor(values)
        else:
            data[key] = NonTensorStack(*values)
    td = TensorDict(data, batch_size=[len(samples)])
    if extra:
        tu.assign_non_tensor(td, **extra)
    return td


def log_prob_info(cfg) -> dict:
    """The ``extra_info`` of the trainer's old-log-prob pass (``_compute_old_log_prob``)."""
    return {"calculate_entropy": True, "compute_loss": False, "temperature": cfg.actor_rollout_ref.rollout.temperature}


def update_info(cfg) -> dict:
    """The ``extra_info`` of ``PPOTrainer._update_actor`` (no distillation in these runs)."""
    ref = cfg.actor_rollout_ref
    mini_batch = ref.actor.ppo_mini_batch_size * ref.rollout.n
    return {
        "calculate_entropy": ref.actor.calculate_entropy or ref.actor.entropy_coeff != 0.0,
        "distillation_use_topk": False,
        "distillation_only": False,
        "global_batch_size": mini_batch,
        "mini_batch_size": mini_batch,
        "epochs": ref.actor.ppo_epochs,
        "seed": ref.actor.data_loader_seed,
        "dataloader_kwargs": {"shuffle": ref.actor.shuffle},
        "temperature": ref.rollout.temperature,
    }
