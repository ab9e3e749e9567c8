"""A paper model's shape without its weights: the Hugging Face config of its shape (``architectures.record``, from its
entry of ``paper.models``), its parameter count, and a model directory of random weights in that shape, which verl's
worker and vLLM's engine load like the real one.

What a step costs depends on the shape, not on the weights' values, so the pilot measures the update and the rollout
of sizes it never downloads in random weights of their exact shapes (``update_speed``, ``rollout_speed``).
"""

from __future__ import annotations

from pathlib import Path

from ...core import model_size

# The config.json ``model_type`` and class of each family (DeepSeek-Math-7B is a llama, as its config says).
MODEL_TYPES = {
    "qwen2": ("qwen2", "Qwen2ForCausalLM"),
    "llama": ("llama", "LlamaForCausalLM"),
    "mistral": ("mistral", "MistralForCausalLM"),
    "deepseek": ("llama", "LlamaForCausalLM"),
}


def hf_config(family: str, arch: dict) -> dict:
    """``config.json``'s fields for a model of ``family`` in the shape ``arch`` (``architectures.record``)."""
    model_type, cls = MODEL_TYPES[family]
    config = {
        "model_type": model_type,
        "architectures": [cls],
        "hidden_size": arch["hidden_size"],
        "intermediate_size": arch["intermediate_size"],
        "num_hidden_layers": arch["num_layers"],
        "num_attention_heads": arch["num_heads"],
        "num_key_value_heads": arch["num_kv_heads"],
        "vocab_size": arch["vocab_size"],
        "tie_word_embeddings": arch["tie_word_embeddings"],
        "torch_dtype": "bfloat16",
    }
    if "head_dim" in arch:
        config["head_dim"] = arch["head_dim"]
    return config


def params(family: str, arch: dict) -> int:
    """Every parameter of the shape: the non-embedding ones (``core.model_size``) plus the token embedding and, untied,
    the output layer."""
    embeddings = arch["vocab_size"] * arch["hidden_size"] * (1 if arch["tie_word_embeddings"] else 2)
    return model_size.non_embedding_params(hf_config(family, arch)) + embeddings


def state_bytes(family: str, arch: dict) -> int:
    """What training holds per GPU at world size 1 before any activation: fp32 weights and gradients and AdamW's two
    fp32 moments (verl's FSDP keeps fp32 master weights), 16 bytes a parameter."""
    return 16 * params(family, arch)


def write_random_model(
    directory: str | Path, family: str, arch: dict, tokenizer_dir: str | Path, seed: int = 0, device: str = "cpu"
) -> Path:
    """A model directory (``save_pretrained``: config, bf16 safetensors and the tokenizer of ``tokenizer_dir``) holding
    freshly initialised weights of the shape; initialised on ``device`` (a GPU makes a 7B model in seconds)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    directory = Path(directory)
    fields = hf_config(family, arch)
    config = AutoConfig.for_model(fields.pop("model_type"), **{k: v for k, v in fields.items() if k != "torch_dtype"})
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(directory)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(directory)
    del model
    return directory
