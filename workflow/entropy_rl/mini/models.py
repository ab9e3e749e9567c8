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


def sft_batch(tokenizer, prompts, responses):
    """Token ids and labels for supervised responses: loss on the response tokens only."""
    prompt_texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    ids, labels = [], []
    for pt, response in zip(prompt_texts, responses):
        p = tokenizer(pt, add_special_tokens=False)["input_ids"]
        r = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        ids.append(p + r)
        labels.append([-100] * len(p) + r)
    width = max(map(len, ids))
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([x + [pad] * (width - len(x)) for x in ids])
    label_ids = torch.tensor([x + [-100] * (width - len(x)) for x in labels])
    attn = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])
    return input_ids, attn, label_ids


def pretrain(model, tokenizer, prompts, responses, steps: int, batch_size: int, lr: float, seed: int) -> list[float]:
    """Supervised pre-training on the mini tasks' responses; returns the loss curve."""
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 20) * 0.5 * (1 + math.cos(math.pi * s / steps))
    )
    model.train()
    losses = []
    for step in range(steps):
        idx = rng.choice(len(prompts), size=batch_size, replace=False)
        ids, attn, labels = sft_batch(tokenizer, [prompts[i] for i in idx], [responses[i] for i in idx])
        loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
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
    model = AutoModelForCausalLM.from_config(model_config(family, arch, tokenizer))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model, tokenizer


def load(path: str | Path):
    """Load a saved policy the way every stage does (local dir or hub id)."""
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model.eval()
    return model, tokenizer
