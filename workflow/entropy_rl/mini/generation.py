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
    # Under the sampling policy at the sampling temperature, per response token (0 under the mask);
    # None when decoding was greedy, the rollout was not sampled here, or they were not asked for.
    log_probs: torch.Tensor | None = None  # (B, R)
    entropy: torch.Tensor | None = None  # (B, R)

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
            None if self.log_probs is None else self.log_probs[idx],
            None if self.entropy is None else self.entropy[idx],
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


def draw(probs: torch.Tensor) -> torch.Tensor:
    """One token per row of ``probs``, exactly distributed as that row, from torch's seeded generator:
    the first token whose cumulative probability exceeds a uniform draw (a zero-probability token is
    never drawn). One uniform per row, where ``torch.multinomial`` or a Gumbel race costs one per token."""
    cdf = probs.double().cumsum(dim=-1)
    u = torch.rand(probs.shape[0], 1, dtype=torch.float64) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(1).clamp(max=probs.shape[1] - 1)


# Finished answers leave the batch once this share of it is done: dropping rows copies the KV
# cache, so it is done in bulk rather than at every step.
DROP_FINISHED_SHARE = 0.25


@torch.no_grad()
def decode(model, ids, mask, temperature: float, max_new_tokens: int, eos: int, pad: int, n: int = 1):
    """Up to ``max_new_tokens`` tokens after each left-padded row of ``ids``, ``n`` answers per row
    (rows i*n .. i*n+n-1 answer row i), drawn at ``temperature`` (0: greedy) from the full
    distribution, and each step's raw logits: ``(tokens (B*n, T), logits (B*n, T, V))``. An answer is
    padded after its EOS (its logits there are 0); decoding stops when every answer has one.

    A loop of the model's own forward with its KV cache, where ``model.generate`` spends as much
    again on per-token bookkeeping (logits processors, stopping criteria) at the mini models' size.
    Each prompt is encoded once and its cache shared by its ``n`` answers: the prompt is about as
    long as an answer, so encoding it n times would cost nearly as much as the answers themselves.
    Answers that have ended leave the batch (and the cache) once ``DROP_FINISHED_SHARE`` of it has:
    an answer's tokens depend only on its own row, so the rest continue as they would have.
    """
    position = (torch.cumsum(mask, dim=1) - 1).clamp(min=0)
    out = model(input_ids=ids, attention_mask=mask, position_ids=position, use_cache=True, logits_to_keep=1)
    cache, step = out.past_key_values, out.logits[:, -1, :].float()
    if n > 1:
        cache.batch_repeat_interleave(n)
        step = step.repeat_interleave(n, dim=0)
        mask, position = mask.repeat_interleave(n, dim=0), position.repeat_interleave(n, dim=0)
    rows = torch.arange(mask.shape[0])  # the answers still in the batch, by their row in the output
    tokens = torch.full((len(rows), max_new_tokens), pad, dtype=torch.long)
    logits = torch.zeros(len(rows), max_new_tokens, step.shape[-1])
    done = torch.zeros(len(rows), dtype=torch.bool)
    for t in range(max_new_tokens):
        token = draw(torch.softmax(step / temperature, dim=-1)) if temperature > 0 else step.argmax(dim=-1)
        token = torch.where(done, pad, token)
        tokens[rows, t], logits[rows, t] = token, step
        done = done | (token == eos)
        if done.all() or t + 1 == max_new_tokens:
            return tokens[:, : t + 1], logits[:, : t + 1]
        if done.float().mean() >= DROP_FINISHED_SHARE:
            live = (~done).nonzero().squeeze(1)
            cache.batch_select_indices(live)
            rows, token, done, mask, position = rows[live], token[live], done[live], mask[live], position[live]
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        position = position[:, -1:] + 1
        out = model(
            input_ids=token[:, None],
            attention_mask=mask,
            position_ids=position,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        step = out.logits[:, -1, :].float()


def generate(
    model,
    tokenizer,
    prompts: list[list[dict]],
    n: int = 1,
    temperature: float = 1.0,
    max_new_tokens: int = 16,
    with_log_probs: bool = True,
) -> Rollout:
    """``n`` responses per prompt, grouped: rows i*n .. i*n+n-1 answer prompt i.

    ``temperature == 0`` is greedy decoding. Sampling uses the full distribution (no top-k or top-p
    truncation) so rollouts are on-policy, as in the paper. A sampled rollout keeps each token's
    log-probability and entropy at the sampling temperature, from the logits it was drawn from:
    the trainer's old log-probs and Eq. 5's token entropies, equal to what a separate forward
    pass (``forward_response``) gives. Evaluation, which grades only the texts, skips them
    (``with_log_probs=False``).
    """
    ids, mask = encode_prompts(tokenizer, prompts)
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    response, logits = decode(model, ids, mask, temperature, max(1, max_new_tokens), eos, pad, n)
    ids, mask = ids.repeat_interleave(n, dim=0), mask.repeat_interleave(n, dim=0)
    rmask = response_mask_from_ids(response, eos)
    response = torch.where(rmask.bool(), response, torch.full_like(response, pad))
    texts = tokenizer.batch_decode(response, skip_special_tokens=True)
    if temperature == 0 or not with_log_probs:
        return Rollout(ids, mask, response, rmask, texts)
    logits = logits / temperature
    log_probs = logprobs_from_logits(logits, response) * rmask
    return Rollout(ids, mask, response, rmask, texts, log_probs, entropy_from_logits(logits) * rmask)


def forward_response(model, rollout: Rollout, temperature: float = 1.0, with_entropy: bool = True):
    """Log-probabilities (and entropies) of the response tokens under ``model``.

    Logits are divided by the rollout temperature before the softmax, as verl's
    actor does, so the log-probs are those of the distribution that was sampled.
    """
    input_ids = rollout.input_ids
    attn = rollout.attention_mask
    position_ids = (torch.cumsum(attn, dim=1) - 1).clamp(min=0)
    r = rollout.response_ids.shape[1]
    # Only the r positions that predict a response token go through the output layer.
    logits = model(input_ids=input_ids, attention_mask=attn, position_ids=position_ids, logits_to_keep=r + 1).logits
    logits = logits[:, :r, :] / temperature
    log_probs = logprobs_from_logits(logits, rollout.response_ids)
    entropy = entropy_from_logits(logits) if with_entropy else None
    return log_probs, entropy
