"""Batched generation and log-probabilities with Hugging Face models.

The layout follows verl's rollout batch: left-padded prompts, right-padded
responses, a ``response_mask`` that covers each response up to and including
its end-of-sequence token, and position ids that skip the left padding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from verl.utils.torch_functional import entropy_from_logits, logprobs_from_logits


@dataclass
class Rollout:
    prompt_ids: torch.Tensor  # (B, P) left-padded
    prompt_mask: torch.Tensor  # (B, P)
    response_ids: torch.Tensor  # (B, R) right-padded
    response_mask: torch.Tensor  # (B, R)
    texts: list[str]  # decoded responses, without special tokens

    @property
    def input_ids(self) -> torch.Tensor:
        return torch.cat([self.prompt_ids, self.response_ids], dim=1)

    @property
    def attention_mask(self) -> torch.Tensor:
        return torch.cat([self.prompt_mask, self.response_mask], dim=1)

    def select(self, idx) -> "Rollout":
        idx = torch.as_tensor(idx, dtype=torch.long)
        return Rollout(
            self.prompt_ids[idx],
            self.prompt_mask[idx],
            self.response_ids[idx],
            self.response_mask[idx],
            [self.texts[i] for i in idx.tolist()],
        )


def encode_prompts(tokenizer, prompts: list[list[dict]]) -> tuple[torch.Tensor, torch.Tensor]:
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    return enc["input_ids"], enc["attention_mask"]


def response_mask_from_ids(response_ids: torch.Tensor, eos_id: int) -> torch.Tensor:
    """1 up to and including the first EOS, 0 after it."""
    is_eos = (response_ids == eos_id).int()
    after_eos = (torch.cumsum(is_eos, dim=1) - is_eos) > 0
    return (~after_eos).long()


@torch.no_grad()
def generate(
    model,
    tokenizer,
    prompts: list[list[dict]],
    n: int = 1,
    temperature: float = 1.0,
    max_new_tokens: int = 16,
) -> Rollout:
    """``n`` responses per prompt, grouped: rows i*n .. i*n+n-1 answer prompt i.

    ``temperature == 0`` is greedy decoding. Sampling uses the full distribution
    (no top-k or top-p truncation) so rollouts are on-policy, as in the paper.
    """
    ids, mask = encode_prompts(tokenizer, prompts)
    ids = ids.repeat_interleave(n, dim=0)
    mask = mask.repeat_interleave(n, dim=0)
    kwargs = dict(max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    if temperature > 0:
        kwargs.update(do_sample=True, temperature=temperature, top_k=0, top_p=1.0)
    else:
        kwargs.update(do_sample=False)
    out = model.generate(input_ids=ids, attention_mask=mask, **kwargs)
    response = out[:, ids.shape[1] :]
    if response.shape[1] == 0:
        response = torch.full((ids.shape[0], 1), tokenizer.eos_token_id, dtype=ids.dtype)
    rmask = response_mask_from_ids(response, tokenizer.eos_token_id)
    response = torch.where(rmask.bool(), response, torch.full_like(response, tokenizer.pad_token_id))
    texts = tokenizer.batch_decode(response, skip_special_tokens=True)
    return Rollout(ids, mask, response, rmask, texts)


def forward_response(model, rollout: Rollout, temperature: float = 1.0, with_entropy: bool = True):
    """Log-probabilities (and entropies) of the response tokens under ``model``.

    Logits are divided by the rollout temperature before the softmax, as verl's
    actor does, so the log-probs are those of the distribution that was sampled.
    """
    input_ids = rollout.input_ids
    attn = rollout.attention_mask
    position_ids = (torch.cumsum(attn, dim=1) - 1).clamp(min=0)
    logits = model(input_ids=input_ids, attention_mask=attn, position_ids=position_ids).logits
    p, r = rollout.prompt_ids.shape[1], rollout.response_ids.shape[1]
    logits = logits[:, p - 1 : p - 1 + r, :] / temperature
    log_probs = logprobs_from_logits(logits, rollout.response_ids)
    entropy = entropy_from_logits(logits) if with_entropy else None
    return log_probs, entropy
