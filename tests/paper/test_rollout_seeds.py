"""Each rollout request's sampling seed (verl_plugin's agent loop): repeatable, and distinct where answers must differ."""

from __future__ import annotations

import asyncio

import hydra
import yaml
from entropy_rl.paper import launch, reward_launch, verl_plugin
from omegaconf import OmegaConf
from support import ROOT
from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop

PAPER = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
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
    entry = _agent_loop_registry[launch.AGENT_LOOP]
    return hydra.utils.get_class(entry["_target_"])


def test_every_run_command_names_the_seeded_loop_and_the_runs_seed():
    assert _agent_loop_class() is verl_plugin.SeededSingleTurnAgentLoop
    for run in ("qwen2.5-7b-grpo", "qwen2.5-7b-grpo-klcov"):
        command = reward_launch.verl_command(PAPER, run)
        seed = PAPER["train"]["seed"]
        assert f"actor_rollout_ref.rollout.agent.default_agent_loop={launch.AGENT_LOOP}" in command
        assert f"actor_rollout_ref.rollout.seed={seed}" in command and f"data.seed={seed}" in command


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
