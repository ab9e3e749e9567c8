"""A stand-in for vLLM 0.24's offline engine, backed by a Hugging Face model, for the paper-scale
power-sampling path on a machine without a GPU (vLLM needs one and is not installed here).

It keeps the parts of vLLM's behaviour that ``power_sampling`` relies on, as read in vLLM 0.24's
source (``v1/sample/sampler.py``, ``v1/worker/gpu_model_runner.py``, ``v1/core/sched/utils.py``):

* with ``logprobs_mode="processed_logprobs"`` a sampled token's logprob is taken after the
  temperature (log softmax of logits / T), while prompt logprobs are always the raw log p;
* ``logprobs=0`` / ``prompt_logprobs=0`` give the chosen token's entry only, as
  ``{token_id: Logprob}`` per position, and ``prompt_logprobs[0]`` is ``None``;
* a completion stops after a token of ``stop_token_ids`` (kept in ``token_ids``), at the EOS unless
  ``ignore_eos``, or at ``max_tokens``; ``seed`` makes a request's draws repeat.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import torch


@dataclass
class SamplingParams:
    n: int = 1
    temperature: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    logprobs: int | None = None
    prompt_logprobs: int | None = None
    ignore_eos: bool = False
    stop_token_ids: list[int] = field(default_factory=list)


@dataclass
class Logprob:
    logprob: float


def TokensPrompt(prompt_token_ids):  # noqa: N802 (vLLM's name: a TypedDict)
    return {"prompt_token_ids": list(prompt_token_ids)}


def install(monkeypatch) -> None:
    """Make ``import vllm`` and ``from vllm.inputs import TokensPrompt`` find this stand-in."""
    vllm, inputs = types.ModuleType("vllm"), types.ModuleType("vllm.inputs")
    vllm.SamplingParams, vllm.inputs, inputs.TokensPrompt = SamplingParams, inputs, TokensPrompt
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.inputs", inputs)


class Engine:
    """``LLM(model, logprobs_mode=...)``'s ``generate``, one request at a time on the CPU."""

    def __init__(self, model, eos_id: int, logprobs_mode: str = "processed_logprobs"):
        self.model, self.eos_id, self.mode = model, eos_id, logprobs_mode
        self.calls: list[int] = []  # requests per generate call: the batching the caller achieved

    @torch.no_grad()
    def _logits(self, ids: list[int]) -> torch.Tensor:
        return self.model(input_ids=torch.tensor([ids])).logits[0].float()

    def generate(self, prompts, sampling_params, use_tqdm=True):
        params = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(prompts)
        self.calls.append(len(prompts))
        return [self._request(p["prompt_token_ids"], sp) for p, sp in zip(prompts, params)]

    def _request(self, prompt: list[int], sp: SamplingParams):
        gen = torch.Generator().manual_seed(sp.seed if sp.seed is not None else 0)
        prompt_logprobs = None
        if sp.prompt_logprobs is not None:
            raw = torch.log_softmax(self._logits(prompt), dim=-1)
            prompt_logprobs = [None] + [{t: Logprob(float(raw[i, t]))} for i, t in enumerate(prompt[1:])]
        outputs = [self._completion(prompt, sp, gen) for _ in range(sp.n)]
        return types.SimpleNamespace(prompt_token_ids=prompt, prompt_logprobs=prompt_logprobs, outputs=outputs)

    def _completion(self, prompt: list[int], sp: SamplingParams, gen: torch.Generator):
        seq, tokens, logprobs = list(prompt), [], []
        stops = set(sp.stop_token_ids) | (set() if sp.ignore_eos else {self.eos_id})
        for _ in range(sp.max_tokens):
            logits = self._logits(seq)[-1]
            if sp.temperature == 0:
                token, processed = int(logits.argmax()), torch.log_softmax(logits, dim=-1)
            else:
                processed = torch.log_softmax(logits / sp.temperature, dim=-1)
                token = int(torch.multinomial(processed.exp(), 1, generator=gen))
            shown = processed if self.mode == "processed_logprobs" else torch.log_softmax(logits, dim=-1)
            seq.append(token)
            tokens.append(token)
            logprobs.append({token: Logprob(float(shown[token]))})
            if token in stops:
                break
        return types.SimpleNamespace(token_ids=tokens, logprobs=logprobs if sp.logprobs is not None else None, text="")
