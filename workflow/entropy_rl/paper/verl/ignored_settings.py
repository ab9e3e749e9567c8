"""Settings verl 0.9.1 composes and validates, then does not apply.

A command holding one reads as a run it is not (the released scripts' ``max_num_gen_batches=10`` read as a bound
while verl refills filtered groups without end), and verl says so at best in a warning on the GPU nodes, after
the booking. Each rule below names the key, when verl 0.9.1 ignores it, and the verl code that shows it: its
warnings (``logger.warning`` in ``verl/trainer/ppo/v1``: "is ignored", "is overridden") and the settings that
code never hands on. ``problems`` is what the preflight refuses a ``main_ppo`` command for.
"""

from __future__ import annotations

from omegaconf import OmegaConf

from ..verl_names import GEN_BATCHES_KEY, TRAINER_MODE

V1 = "verl/trainer/ppo/v1"


def _get(cfg, key: str, default=None):
    value = OmegaConf.select(cfg, key, default=default)
    return default if value is None else value


def problems(cfg) -> list[str]:
    """One sentence per setting of the composed command that verl 0.9.1's V1 trainer would ignore."""
    if not _get(cfg, "trainer.use_v1", False):
        return []  # the legacy trainer: the preflight refuses it on its own (no group filter)
    mode = cfg.trainer.v1.trainer_mode
    filtering = bool(_get(cfg, "algorithm.filter_groups.enable", False))
    custom_sampler = bool(_get(cfg, "trainer.v1.sampler.custom_sampler.path")) and bool(
        _get(cfg, "trainer.v1.sampler.custom_sampler.name")
    )
    refill_failed = bool(_get(cfg, "trainer.v1.sampler.sync_refill_failed_groups", False))
    found = []

    gen_batches = _get(cfg, "algorithm.filter_groups.max_num_gen_batches", 0)
    if gen_batches > 0:
        found.append(
            f"algorithm.filter_groups.max_num_gen_batches={gen_batches} is ignored: no code of verl 0.9.1 reads it but "
            f"a warning that it is ({V1}/trainer_base.py, PPOTrainer._resolve_filter_groups_metric), and its replay "
            f"buffer refills filtered groups without bound. The released scripts' bound is {GEN_BATCHES_KEY}, which "
            "the trainer of entropy_rl.paper.verl_plugin applies"
        )
    inflight = _get(cfg, "algorithm.filter_groups.max_inflight_gen_batches", 1)
    if inflight != 1 and not (mode == "sync" and filtering and not custom_sampler):
        found.append(
            f"algorithm.filter_groups.max_inflight_gen_batches={inflight} is ignored: verl 0.9.1 hands it only to the "
            f"built-in ReplayBuffer of trainer mode 'sync' with group filtering on ({V1}/trainer_base.py, "
            f"PPOTrainer._build_replay_buffer), and mode {mode!r} gets another; where it is read it caps prompts in "
            "flight, not the generation batches of a step"
        )
    gen_batch_size = _get(cfg, "data.gen_batch_size")
    if gen_batch_size not in (None, 1) and (mode != "sync" or filtering or refill_failed):
        found.append(
            f"data.gen_batch_size={gen_batch_size} is ignored: verl 0.9.1 overrides it to 1 with group filtering or a "
            f"trainer mode other than 'sync' ({V1}/trainer_base.py, PPOTrainer._init_dataloader warns 'is overridden')"
        )
    val = cfg.actor_rollout_ref.rollout.val_kwargs
    if not _get(val, "do_sample", True) and _get(val, "temperature", 0) > 0:
        found.append(
            f"actor_rollout_ref.rollout.val_kwargs.do_sample=false is ignored: verl 0.9.1's V1 validation samples at "
            f"val_kwargs.temperature ({val.temperature}) ({V1}/agent_loop_tq.py, AgentLoopWorkerTQ.generate_sequences "
            "reads only its temperature, top_p and top_k); greedy validation is temperature 0"
        )
    if _get(cfg, f"trainer.v1.{TRAINER_MODE}") is not None and mode != TRAINER_MODE:
        found.append(
            f"trainer.v1.{TRAINER_MODE} is ignored: only trainer mode {TRAINER_MODE!r} (entropy_rl.paper.verl_plugin) "
            f"reads it, and the command runs mode {mode!r}"
        )
    switch = _get(cfg, "trainer.v1.separate_async.hybrid_rollout.enable_switch", False)
    if mode == "separate_async" and switch and not _get(cfg, "actor_rollout_ref.hybrid_engine", True):
        found.append(
            "trainer.v1.separate_async.hybrid_rollout.enable_switch=true is ignored with "
            f"actor_rollout_ref.hybrid_engine=false ({V1}/trainer_separate_async.py, PPOTrainerSeparateAsync.__init__ "
            "warns 'is ignored')"
        )
    return found
