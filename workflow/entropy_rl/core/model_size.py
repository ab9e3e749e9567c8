"""A model's size as the paper's Figure 7 counts it: non-embedding parameters.

As in Kaplan et al. (2020), the count leaves out the token embedding and the output (unembedding)
matrix, whether tied or not, and keeps everything else: attention and MLP weights and biases and
the norms. It is computed from the model's configuration (``config.json``) alone, with no torch and
no weights, so the study can read it and Figure 7's x axis comes from the architecture, never from
a typed number. The architectures are the decoder families this workflow trains (``model_type``
qwen2, llama and mistral; DeepSeek-Math-7B is a llama); the tests check the count against the
parameters of the real models.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

# model_type → (q, k and v projections have biases, the output projection has one); llama reads both
# from the config's attention_bias, as transformers does.
ATTENTION_BIAS = {"qwen2": (True, False), "llama": None, "mistral": (False, False)}


def read_config(path: str | Path) -> dict:
    """The configuration in a model directory (its ``config.json``) or in a ``config.json`` file."""
    path = Path(path)
    return json.loads((path / "config.json" if path.is_dir() else path).read_text())


def non_embedding_params(config: Mapping | str | Path) -> int:
    """Parameters of a decoder-only causal LM without its token embedding and output layer.

    ``config`` is a model's configuration as a mapping (``config.json``'s content, or a transformers
    config's ``to_dict()``), or a model directory or ``config.json`` path to read it from.
    """
    if not isinstance(config, Mapping):
        config = read_config(config)
    kind = config.get("model_type")
    if kind not in ATTENTION_BIAS:
        raise ValueError(
            f"non-embedding parameters: no count for model_type {kind!r}; counted are {sorted(ATTENTION_BIAS)}"
        )
    hidden, inner = config["hidden_size"], config["intermediate_size"]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or hidden // heads
    qkv_bias, out_bias = ATTENTION_BIAS[kind] or (config.get("attention_bias", False),) * 2
    mlp_bias = kind == "llama" and config.get("mlp_bias", False)

    q, kv = heads * head_dim, kv_heads * head_dim
    attention = hidden * (q + 2 * kv) + q * hidden + qkv_bias * (q + 2 * kv) + out_bias * hidden
    mlp = 3 * hidden * inner + mlp_bias * (2 * inner + hidden)  # gate, up and down projections
    norms = 2 * hidden  # RMSNorm before attention and before the MLP
    return int(config["num_hidden_layers"] * (attention + mlp + norms) + hidden)  # + the final norm
