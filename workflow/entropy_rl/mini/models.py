"""The mini model family: real Hugging Face architectures at tiny sizes.

Each model is built from a transformers config (Qwen2, Llama or Mistral),
pre-trained on responses to the mini tasks (see ``data.sft_responses``) until it solves some of them
(RL needs correct samples to learn from), and saved with ``save_pretrained`` so
every later stage loads it with ``AutoModelForCausalLM.from_pretrained``, as it
would a hub model.
"""

from __future__ import annotations

import logging
import math
import zlib
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, MistralConfig, Qwen2Config

log = logging.getLogger(__name__)

CONFIG_CLASSES = {"qwen2": Qwen2Config, "llama": LlamaConfig, "mistral": MistralConfig}
# The models' own eager attention rather than transformers' default, torch's SDPA: at a head
# width of 16 with a padding mask, SDPA on a CPU is the slower (measured on qwen2-m, one thread:
# a pre-training step 152 -> 115 ms, a rollout of 256 answers 0.47 -> 0.41 s; the same tokens drawn).
ATTENTION = "eager"


def model_config(family: str, arch: dict, tokenizer) -> object:
    """A transformers config for ``family`` at the size given by ``arch``."""
    cls = CONFIG_CLASSES[family]
    kwargs = dict(
        vocab_size=len(tokenizer),
        hidden_size=arch["hidden_size"],
        intermediate_size=arch["intermediate_size"],
        num_hidden_layers=arch["num_layers"],
        num_attention_heads=arch["num_heads"],
        num_key_value_heads=arch.get("num_kv_heads", arch["num_heads"]),
        max_position_embeddings=arch.get("max_positions", 256),
        tie_word_embeddings=arch.get("tie_word_embeddings", True),
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    if family == "mistral":
        kwargs["sliding_window"] = arch.get("sliding_window")
    return cls(**kwargs)


def sft_examples(tokenizer, prompts, responses) -> list[tuple[list[int], list[int]]]:
    """Token ids and labels of each supervised response (the loss is on the response tokens only),
    tokenized once for the whole corpus rather than again in every batch."""
    prompt_texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    prompt_ids = tokenizer(prompt_texts, add_special_tokens=False)["input_ids"]
    response_ids = tokenizer(list(responses), add_special_tokens=False)["input_ids"]
    eos = [tokenizer.eos_token_id]
    return [(p + r + eos, [-100] * len(p) + r + eos) for p, r in zip(prompt_ids, response_ids)]


def sft_batch(examples: list[tuple[list[int], list[int]]], pad: int):
    """Right-padded ids, attention mask and labels of a batch of ``sft_examples``."""
    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in examples])
    label_ids = torch.tensor([labels + [-100] * (width - len(labels)) for _, labels in examples])
    attn = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in examples])
    return input_ids, attn, label_ids


def response_loss(model, input_ids, attention_mask, labels) -> torch.Tensor:
    """The mean cross-entropy of the labelled tokens, ``model(..., labels=labels).loss``, with the output
    layer applied only where there is a label: in the pre-training corpus a sixth of the positions,
    the rest being prompts and padding."""
    hidden = model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    target = labels[:, 1:]
    labelled = target != -100
    logits = model.get_output_embeddings()(hidden[:, :-1][labelled])
    return torch.nn.functional.cross_entropy(logits.float(), target[labelled])


def native_bf16() -> bool:
    """Whether this CPU multiplies bf16 natively (AVX-512 BF16 or AMX tiles), as torch's own CPU probe reads it.
    Elsewhere bf16 is emulated by conversions, slower than fp32."""
    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


def pretrain_precision(setting: str) -> str:
    """The precision pre-training runs in: ``setting`` ("bf16" or "fp32"), or for "auto" bf16 where the CPU has
    native bf16 and fp32 where it has not."""
    if setting == "auto":
        return "bf16" if native_bf16() else "fp32"
    return setting


def pretrain(
    model, tokenizer, prompts, responses, steps: int, batch_size: int, lr: float, seed: int, precision: str = "fp32"
) -> list[float]:
    """Supervised pre-training on the mini tasks' responses; returns the loss curve.

    ``precision`` "bf16" is mixed precision: the forward and backward under CPU autocast to bfloat16, the weights,
    the optimiser and the loss in fp32, as verl's FSDP actor computes (bf16 parameters in its forward, fp32 in its
    optimiser). Measured on one thread with AVX-512 BF16 (``benchmarks/profile_mini.py --precision``, 400 steps): a step
    40.0 -> 30.3 ms on qwen2-m, 98.4 -> 51.6 ms on qwen2-xl. The RL trainer stays fp32: its old log-probabilities are
    the sampler's, which a bf16 update would not start from, and its decoding is slower in bf16 at these sizes.
    """
    rng = np.random.default_rng(seed)
    examples = sft_examples(tokenizer, prompts, responses)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 20) * 0.5 * (1 + math.cos(math.pi * s / steps))
    )
    model.train()
    losses = []
    for step in range(steps):
        idx = rng.choice(len(examples), size=batch_size, replace=False)
        ids, attn, labels = sft_batch([examples[i] for i in idx], tokenizer.pad_token_id)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = response_loss(model, ids, attn, labels)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if step % 100 == 0:
            log.info("pretrain step %d loss %.4f", step, loss.item())
    model.eval()
    return losses


def model_seed(name: str, base: int) -> int:
    """A stable per-model seed, so same-shaped models of two families do not start identical."""
    return base + zlib.crc32(name.encode()) % 100_000


def build_mini_model(family: str, arch: dict, tokenizer_dir: str | Path, seed: int):
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    model = AutoModelForCausalLM.from_config(model_config(family, arch, tokenizer), attn_implementation=ATTENTION)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model, tokenizer


def load(path: str | Path):
    """Load a saved policy the way every stage does (local dir or hub id)."""
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation=ATTENTION)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model.eval()
    return model, tokenizer
