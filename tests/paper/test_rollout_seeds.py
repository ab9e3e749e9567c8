"""Each rollout request's sampling seed (verl_plugin's agent loop): repeatable, and distinct where answers must differ."""

from __future__ import annotations

import asyncio
import json

import hydra
import yaml
from entropy_rl.core.scale import build
from entropy_rl.paper import reward_launch, verl_names, verl_plugin
from omegaconf import OmegaConf
from support import ROOT
from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]  # the section as written, to edit
PAPER = build("paper", CONFIG)
PROMPT = [{"role": "user", "content": "What is 1 + 1?"}]
TRAIN = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}


def seeds_of(loop, requests: list[dict], sampling=TRAIN) -> list[int]:
    """The seeds ``loop`` hands verl's single-turn loop (its engine call stubbed) for ``requests``, sent concurrently."""
    sent = []

    async def engine(self, sampling_params, **kwargs):
        sent.append((kwargs["session_id"], sampling_params["seed"]))
        assert {k: v for k, v in sampling_params.items() if k != "seed"} == sampling  # nothing else changed

    async def group():
        await asyncio.gather(*(loop.run(dict(sampling), **r) for r in requests))

    original = SingleTurnAgentLoop.run
    SingleTurnAgentLoop.run = engine
    try:
        asyncio.run(group())
    finally:
        SingleTurnAgentLoop.run = original
    return [seed for _, seed in sorted(sent)]


def agent_loop(seed: int):
    loop = object.__new__(_agent_loop_class())
    loop.config = OmegaConf.create({"data": {"seed": seed}})
    return loop


def _agent_loop_class():
    """The class verl's agent-loop worker instantiates for the run's ``default_agent_loop``, by its registry entry."""
    entry = _agent_loop_registry[verl_names.AGENT_LOOP]
    return hydra.utils.get_class(entry["_target_"])


def test_a_run_asks_for_per_request_seeds_or_has_the_engines_seed_only():
    """Per-request seeds cost a GPU up to a third of a decode step (docs/reproducibility.md): a paper run has the
    engine's seed (verl's single-turn loop), the seeded loop only where its settings ask (the CPU pilot's)."""
    assert _agent_loop_class() is verl_plugin.SeededSingleTurnAgentLoop
    seeded = f"actor_rollout_ref.rollout.agent.default_agent_loop={verl_names.AGENT_LOOP}"
    for run in ("qwen2.5-7b-grpo", "qwen2.5-7b-grpo-klcov"):
        command = reward_launch.verl_command(PAPER, run)
        seed = CONFIG["train"]["seed"]
        assert not any("default_agent_loop" in o for o in command)  # verl's own: single_turn_agent
        assert f"actor_rollout_ref.rollout.seed={seed}" in command and f"data.seed={seed}" in command
        asked = json.loads(json.dumps(CONFIG))
        asked["runs"][run]["overrides"] = {**asked["runs"][run].get("overrides", {}), "rollout_seeds": "per_request"}
        assert seeded in reward_launch.verl_command(build("paper", asked), run)
    pilot_cpu = yaml.safe_load((ROOT / "tests" / "fixtures" / "pilot_cpu" / "paper.yaml").read_text())["paper"]
    assert pilot_cpu["pilot"]["runs"]["pilot-grpo"]["overrides"]["rollout_seeds"] == "per_request"


def test_a_group_draws_with_distinct_seeds_and_the_same_ones_again():
    group = [{"raw_prompt": PROMPT, "index": 7, "global_steps": 3, "session_id": i} for i in range(8)]
    first = seeds_of(agent_loop(0), group)
    assert len(set(first)) == 8  # the answers of one group must differ
    assert seeds_of(agent_loop(0), list(reversed(group))) == first  # whatever order verl sends them in
    assert set(seeds_of(agent_loop(1), group)).isdisjoint(first)  # another replicate draws other answers
    later = [{**r, "global_steps": 4} for r in group]
    assert set(seeds_of(agent_loop(0), later)).isdisjoint(first)  # and the next step too
    other = [{**r, "raw_prompt": [{"role": "user", "content": "What is 2 + 2?"}]} for r in group]
    assert set(seeds_of(agent_loop(0), other)).isdisjoint(first)  # another prompt of the same index (another part)
    validation = {**TRAIN, "temperature": 0.6}
    assert set(seeds_of(agent_loop(0), group, validation)).isdisjoint(first)


def _worker(tmp_path, worker_class):
    """verl's own agent-loop worker, its engine client absent: the run's composed config (qwen2.5-7b-grpo's command,
    as main_ppo composes it), a tokenizer, no tools. Only its engine call is stubbed, below verl's single-turn loop."""
    import verl_cpu
    from entropy_rl.paper.verl import checks
    from transformers import AutoTokenizer

    worker_class = getattr(worker_class, "__ray_actor_class__", worker_class)  # a @ray.remote class: the class itself
    worker = object.__new__(worker_class)
    worker.config = checks.compose(reward_launch.verl_command(PAPER, "qwen2.5-7b-grpo")[3:])
    worker.tokenizer = AutoTokenizer.from_pretrained(verl_cpu.build_tiny_model(tmp_path / "tok", ["What is 1 + 1? 2"]))
    worker.processor = worker.llm_client = worker.hf_model_type = worker.dataset_cls = None
    worker.tools = []
    return worker


def test_verls_transferqueue_worker_passes_what_each_seed_is_made_of(tmp_path, monkeypatch):
    """verl 0.9.1's TransferQueue agent-loop worker (the one main_ppo's v1 trainer runs) for real, from
    ``_run_prompt`` through ``_run_agent_loop`` and the registry's instantiation of the seeded loop: the n requests
    of one prompt reach ``request_seed`` with that prompt's step, index and messages and their own session ids."""
    from verl.trainer.ppo.v1 import agent_loop_tq

    async def kv_put(**_):  # TransferQueue's status tags: no controller here
        return None

    monkeypatch.setattr(agent_loop_tq.tq, "async_kv_put", kv_put)
    sent = []

    async def engine(self, sampling_params, **kwargs):
        sent.append((kwargs["session_id"], sampling_params["seed"]))
        return None

    monkeypatch.setattr(SingleTurnAgentLoop, "run", engine)
    worker = _worker(tmp_path, agent_loop_tq.AgentLoopWorkerTQ)

    async def postprocess(output, validate, **kwargs):  # the outputs into TransferQueue: nothing to put here
        return None

    worker._agent_loop_postprocess = postprocess
    prompt = {"uid": "u7", "index": 7, "raw_prompt": PROMPT, "global_steps": 3, "agent_name": verl_names.AGENT_LOOP}
    trajectory = {"step": 3, "sample_index": 7, "rollout_n": 0, "validate": False}
    asyncio.run(worker._run_prompt(dict(prompt), dict(TRAIN), trajectory))
    n = worker.config.actor_rollout_ref.rollout.n
    seed = worker.config.data.seed
    assert sorted(sent) == [(i, verl_plugin.request_seed(seed, 3, 7, PROMPT, i, TRAIN)) for i in range(n)]
    assert len({s for _, s in sent}) == n == CONFIG["train"]["rollout_n"]


def test_a_request_without_a_seed_field_is_refused(tmp_path, monkeypatch):
    """verl's DataProto agent-loop worker sends a prompt's fields and no ``session_id`` (nor ``global_steps``): a
    default would seed the whole group alike; the seeded loop refuses it instead, naming what is missing."""
    import pytest
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    monkeypatch.setattr(SingleTurnAgentLoop, "run", lambda *a, **k: pytest.fail("reached the engine"))
    worker = _worker(tmp_path, AgentLoopWorker)
    trajectory = {"step": 3, "sample_index": 7, "rollout_n": 0, "validate": False}
    kwargs = {"uid": "u7", "index": 7, "raw_prompt": PROMPT}  # a non_tensor_batch row, as generate_sequences passes it
    with pytest.raises(KeyError, match=r"lacks \['global_steps', 'session_id'\]"):
        asyncio.run(worker._run_agent_loop(dict(TRAIN), trajectory, agent_name=verl_names.AGENT_LOOP, **kwargs))
