"""Non-embedding parameters (Kaplan et al.'s N, Figure 7's model size), counted from config.json."""

import json

import pytest
from entropy_rl.core import model_size

# The config.json of the mini study's qwen2-s (results/models/qwen2-s), as far as the count reads it.
QWEN2_S = {
    "model_type": "qwen2",
    "vocab_size": 329,
    "hidden_size": 48,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": True,
}


def test_non_embedding_params_counts_from_the_config_without_embeddings():
    """Per layer: q, k, v (with biases in Qwen2) and o projections, the three MLP matrices and two norms; then
    the final norm. Neither the vocabulary nor tying the output layer changes it (tests/mini checks the real models)."""
    h, inner, kv = 48, 96, 2 * 12
    layer = (h * h + h) + 2 * (h * kv + kv) + h * h + 3 * h * inner + 2 * h
    assert model_size.non_embedding_params(QWEN2_S) == 2 * layer + h == 41904  # Figure 7's qwen2-s in the mini study
    assert model_size.non_embedding_params(dict(QWEN2_S, vocab_size=50_000, tie_word_embeddings=False)) == 41904
    llama = dict(QWEN2_S, model_type="llama")
    assert model_size.non_embedding_params(llama) == 41904 - 2 * (h + 2 * kv)  # no attention biases
    assert model_size.non_embedding_params(dict(llama, attention_bias=True)) == 41904 + 2 * h  # o_proj's bias too


def test_non_embedding_params_reads_a_saved_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN2_S))
    assert (
        model_size.non_embedding_params(tmp_path) == model_size.non_embedding_params(tmp_path / "config.json") == 41904
    )
    assert model_size.non_embedding_params(str(tmp_path)) == 41904


def test_non_embedding_params_names_an_architecture_it_cannot_count():
    with pytest.raises(
        ValueError, match=r"no count for model_type 'gpt2'; counted are \['llama', 'mistral', 'qwen2'\]"
    ):
        model_size.non_embedding_params(dict(QWEN2_S, model_type="gpt2"))
