"""What a token costs in each paper model's architecture (its shape, ``core.scale.Shape``, from its entry of config.yaml
``paper.models``): the FLOPs of its matmuls and of its attention, counted as verl's own ``FlopsCounter`` counts them,
and the bytes of KV cache it holds.

verl 0.9.1 (``verl/utils/flops_counter.py``, ``_estimate_qwen2_flops``, which also serves llama and mistral) counts a
forward and backward pass over a batch of sequences as

    6·dense·Σs + 6·Σs²·head_dim·heads·layers,
    dense = layers·(3·hidden·intermediate + hidden·(q + k + v + o)) + 2·vocab·hidden,

the second term being causal attention (QKᵀ and AV, half the square). The embedding is counted as a matmul like the
output head, tied or not, so ``dense`` exceeds the matmul parameters by ``vocab·hidden`` (and by the untied head's
count less the embedding's, nothing); counting the same way keeps every MFU here comparable with the ``perf/mfu``
verl logs, which is what the pilot's training measures. A forward pass is a third of that count. A pass over a
sequence of ``s`` tokens is, per token, ``2·dense + 2·s·head_dim·heads·layers``; decoding a token at position ``t``
reads ``t`` keys, ``2·dense + 4·t·head_dim·heads·layers``. Lengths here are means: the spread of lengths in a real
batch adds its variance over the mean to ``s`` (Σs²/Σs), which a mean leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...core.scale import Scale, Shape


@dataclass(frozen=True)
class Architecture:
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool

    @classmethod
    def of(cls, shape: Shape) -> Architecture:
        """From a model's shape (head_dim, where unset, is hidden / heads, as transformers derives it)."""
        return cls(
            shape.hidden_size,
            shape.intermediate_size,
            shape.num_layers,
            shape.num_heads,
            shape.kv_heads,
            shape.head_size,
            shape.vocab_size,
            shape.tie_word_embeddings,
        )

    @property
    def dense(self) -> int:
        """verl's ``dense_N``: the matmul weights a token passes, the embedding counted as one."""
        q = o = self.heads * self.head_dim
        kv = self.kv_heads * self.head_dim
        per_layer = 3 * self.hidden * self.intermediate + self.hidden * (q + 2 * kv + o)
        return self.layers * per_layer + 2 * self.vocab * self.hidden

    @property
    def parameters(self) -> int:
        """The weights a save holds: the layers' matmuls and the embedding, the output head apart unless tied (the
        norms, a few thousand, left out)."""
        q = o = self.heads * self.head_dim
        kv = self.kv_heads * self.head_dim
        per_layer = 3 * self.hidden * self.intermediate + self.hidden * (q + 2 * kv + o)
        return self.layers * per_layer + (1 if self.tied else 2) * self.vocab * self.hidden

    @property
    def attention_width(self) -> int:
        """head_dim·heads·layers: what attention costs per key a query reads, over 2 (QKᵀ and AV, 2 FLOPs a MAC)."""
        return self.head_dim * self.heads * self.layers

    def forward(self, sequence: float) -> float:
        """FLOPs a token of one forward pass over sequences of ``sequence`` tokens (log-probs, the reference, scoring)."""
        return 2 * self.dense + 2 * sequence * self.attention_width

    def train(self, sequence: float) -> float:
        """FLOPs a token of one forward and backward pass (a PPO epoch): three forwards."""
        return 3 * self.forward(sequence)

    def decode(self, context: float) -> float:
        """FLOPs of generating one token that reads ``context`` cached keys."""
        return 2 * self.dense + 4 * context * self.attention_width

    def kv_cache_bytes(self, dtype_bytes: int = 2) -> int:
        """Bytes of K and V cached a token, over every layer (bf16)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes


def of_model(scale: Scale, model: str) -> Architecture:
    """A model's architecture, from its shape (an instruct model's is its base's, ``core.scale.build``)."""
    return Architecture.of(scale.models[model].shape)


# A shape as a measurement records it (the speed job's ``arch``, the probes' spec, ``shapes``): its published
# config.json's fields (num_layers: num_hidden_layers, num_heads and num_kv_heads: the attention's and the key-value
# heads), head_dim only where it is not hidden_size / num_heads.
RECORDED = (
    "hidden_size",
    "intermediate_size",
    "num_layers",
    "num_heads",
    "num_kv_heads",
    "vocab_size",
    "tie_word_embeddings",
)


def record(shape: Shape) -> dict:
    """A shape as a measurement records it (``RECORDED``)."""
    return {key: getattr(shape, key) for key in RECORDED} | ({"head_dim": shape.head_dim} if shape.head_dim else {})


def recorded(arch: Mapping) -> Architecture:
    """The architecture of a recorded shape (``record``); its family, which the FLOPs do not depend on, is not recorded."""
    return Architecture.of(Shape(family="", **arch))


# The FLOPs a token of each timed kind costs at the budget's mean lengths. The update: the old log-prob pass and one
# PPO epoch over whole sequences; the rollout: a generated token, reading the prompt and half the response on average
# (what its roofline charges, paper.cost.decode, is ``efficiency.kind_flops``).
def update_flops(arch: Architecture, prompt: float, response: float, epochs: int = 1) -> float:
    return arch.forward(prompt + response) + epochs * arch.train(prompt + response)


def rollout_flops(arch: Architecture, prompt: float, response: float) -> float:
    return arch.decode(prompt + response / 2)
