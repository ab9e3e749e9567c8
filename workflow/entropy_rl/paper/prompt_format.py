"""Prompt formats at paper scale: how a conversation (verl's ``prompt`` column, a list of
``{role, content}``) becomes the text a model reads — in evaluation (vLLM's ``LLM.chat``), in the
power-sampling study and in verl's rollout — and the checks a vLLM engine would fail.

Why a format is named per model: vLLM 0.24 renders a chat only with a template. It takes the one
it is given, else the tokenizer's own, else a fallback registered for the model type, and it
registers none for qwen2, llama or mistral (``vllm/transformers_utils/chat_templates/registry.py``).
Without one it raises ``ChatTemplateResolutionError``: "As of transformers v4.44, default chat
template is no longer allowed, so you must provide a chat template if the tokenizer does not define
one." (``vllm/renderers/hf.py``, ``safe_apply_chat_template``). Qwen2.5 tokenizers, base models
included, ship a template; Mistral and Llama base tokenizers may not. Each model in
``config.yaml`` (``paper.models.<name>.chat_template``) therefore names a format of ``FORMATS``:

* ``tokenizer``: the tokenizer's own template, which must exist (the Qwen models keep Qwen's own).
* ``plain``: an explicit plain-text template for base models, with no chat markup: the
  "Question: …\\nAnswer:" layout of lm-evaluation-harness's GSM8K task
  (``lm_eval/tasks/gsm8k/gsm8k.yaml``, ``doc_to_text``), which is also the mini family's own
  template (``entropy_rl.mini.tokenizer.CHAT_TEMPLATE``), so base models read prompts the same way at
  both scales. It starts with the tokenizer's BOS (vLLM's chat and verl's dataset tokenize the
  rendered text without adding special tokens) and ends each worked answer with its EOS.

``chat_template(name, tokenizer)`` gives what to hand to ``LLM.chat(..., chat_template=...)`` and to
verl (``actor_rollout_ref.model.custom_chat_template``): the template text, or ``None`` for
``tokenizer`` (nothing to override). ``check`` and ``engine_problems`` read only JSON files, so a
preflight runs them without torch or vLLM.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PromptFormat:
    name: str
    template: str | None  # Jinja chat template; None: the tokenizer's own
    description: str
    source: str


FORMATS: dict[str, PromptFormat] = {}


def register(fmt: PromptFormat) -> PromptFormat:
    """Add a format to ``FORMATS``; a name is registered once (a second one would silently change
    every model that names it)."""
    if fmt.name in FORMATS:
        raise ValueError(f"prompt format {fmt.name!r} is already registered")
    FORMATS[fmt.name] = fmt
    return fmt


PLAIN = (
    "{%- if bos_token %}{{ bos_token }}{% endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' %}{{ message['content'] + '\\n\\n' }}"
    "{%- elif message['role'] == 'user' %}{{ 'Question: ' + message['content'] + '\\n' }}"
    "{%- elif message['role'] == 'assistant' %}{{ 'Answer: ' + message['content'] + (eos_token or '') + '\\n' }}"
    "{%- else %}{{ raise_exception('the plain prompt format has no role ' + message['role']) }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{ 'Answer:' }}{% endif %}"
)

register(
    PromptFormat(
        "tokenizer",
        None,
        "the tokenizer's own chat template (tokenizer_config.json or chat_template.jinja); it must exist",
        "the model's hub repository",
    )
)
register(
    PromptFormat(
        "plain",
        PLAIN,
        "plain text for base models: [BOS] 'Question: <user>\\n' ... 'Answer:'",
        "lm-evaluation-harness GSM8K doc_to_text ('Question: {{question}}\\nAnswer:'); entropy_rl.mini.tokenizer.CHAT_TEMPLATE",
    )
)


def get(name: str) -> PromptFormat:
    if name not in FORMATS:
        raise ValueError(f"unknown prompt format {name!r}; formats are {sorted(FORMATS)}")
    return FORMATS[name]


def chat_template(name: str, tokenizer) -> str | None:
    """The template to pass as ``chat_template=`` to vLLM's ``LLM.chat`` and as verl's
    ``actor_rollout_ref.model.custom_chat_template``: the format's text, or ``None`` for
    ``tokenizer`` after checking that ``tokenizer`` (a loaded tokenizer) has a template of its own."""
    fmt = get(name)
    if fmt.template is None and not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            f"prompt format {name!r} uses the tokenizer's own chat template, and "
            f"{getattr(tokenizer, 'name_or_path', 'this tokenizer')} has none; "
            f"name an explicit format in config.yaml (paper.models.<model>.chat_template), e.g. 'plain'"
        )
    return fmt.template


def template_text(name: str) -> str | None:
    """The format's own template text, or ``None`` for ``tokenizer``; needs no tokenizer (planning time)."""
    return get(name).template


def template_file(name: str, directory: str | Path) -> Path | None:
    """``<directory>/<name>.jinja`` holding the format's template (rewritten only when it differs), or
    ``None`` for ``tokenizer``: for a tool that takes a template file (vLLM's ``--chat-template``)."""
    text = template_text(name)
    if text is None:
        return None
    path = Path(directory) / f"{name}.jinja"
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def verl_override(name: str) -> str | None:
    """The Hydra override that gives verl 0.9.1 this format (``None`` for ``tokenizer``: nothing to
    override): ``actor_rollout_ref.model.custom_chat_template='<template>'``, quoted for Hydra's
    parser. verl sets it on the tokenizer its V1 trainer builds (``verl/workers/config/model.py``,
    ``HFModelConfig.__post_init__``), which both its dataset (prompt lengths) and its agent loop
    (rollout prompts) use."""
    text = template_text(name)
    if text is None:
        return None
    if "${" in text:
        raise ValueError(f"prompt format {name!r}: '${{' would be read as an OmegaConf interpolation")
    # Hydra's quoted strings: a backslash run before a quote (or at the end) is doubled, a quote escaped.
    quoted = re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, text).replace("'", "\\'")
    return f"actor_rollout_ref.model.custom_chat_template='{quoted}'"


def tokenizer_template(tokenizer_dir: str | Path) -> str | None:
    """The chat template a tokenizer directory carries, where transformers and vLLM look for it:
    ``chat_template.jinja``, ``tokenizer_config.json``'s ``chat_template`` (a string, or a list of
    named templates of which ``default`` is used), or a processor's ``chat_template.json``."""
    d = Path(tokenizer_dir)
    if (d / "chat_template.jinja").is_file() and (d / "chat_template.jinja").read_text().strip():
        return (d / "chat_template.jinja").read_text()
    for file in ("tokenizer_config.json", "chat_template.json"):
        if (d / file).is_file():
            found = json.loads((d / file).read_text()).get("chat_template")
            if isinstance(found, list):
                found = {t.get("name"): t.get("template") for t in found}.get("default")
            if isinstance(found, str) and found.strip():
                return found
    return None


def check(name: str, tokenizer_dir: str | Path) -> list[str]:
    """Why the tokenizer files in ``tokenizer_dir`` cannot serve format ``name`` (empty: they can)."""
    if name not in FORMATS:
        return [f"unknown prompt format {name!r}; formats are {sorted(FORMATS)}"]
    d = Path(tokenizer_dir)
    if not (d / "tokenizer_config.json").is_file():
        return [f"{d}: no tokenizer_config.json"]
    if FORMATS[name].template is None and tokenizer_template(d) is None:
        return [
            f"{d}: prompt format 'tokenizer' needs the tokenizer's own chat template and there is none "
            "(tokenizer_config.json chat_template, chat_template.jinja); vLLM 0.24 would raise "
            "ChatTemplateResolutionError: As of transformers v4.44, default chat template is no longer allowed, "
            "so you must provide a chat template if the tokenizer does not define one. (vllm/renderers/hf.py)"
        ]
    return []


def render(tokenizer, conversations: list[list[dict]], template: str | None) -> list[list[int]]:
    """Each conversation's prompt token ids as vLLM's ``LLM.chat`` makes them: the template rendered
    with the generation prompt, then tokenized without special tokens (vLLM's chat tokenizes with
    ``add_special_tokens=False``: ``vllm/renderers/base.py``, ``default_chat_tok_params``), as verl's
    dataset does. ``template`` is ``chat_template(...)``'s answer: ``None`` is the tokenizer's own."""
    texts = [
        tokenizer.apply_chat_template(
            [dict(m) for m in conv], chat_template=template, tokenize=False, add_generation_prompt=True
        )
        for conv in conversations
    ]
    return [list(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]


# ---- what a vLLM 0.24 engine would refuse, from the model's JSON files -----------------------------

# config.json keys vLLM 0.24 reads for a model's context (the smallest wins), in
# vllm/transformers_utils/model_arch_config_convertor.py, derive_max_model_len_and_key.
_MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)


def _text_config(config: dict) -> dict:
    return config.get("text_config") or config  # a multimodal wrapper (Mistral-Small-3.1) nests the LM's


def max_context(config: dict, tokenizer_config: dict | None = None) -> tuple[float, str]:
    """The longest ``max_model_len`` vLLM 0.24 accepts for a model (prompt + answer tokens) and the key
    it came from, as ``_get_and_verify_max_len`` (``vllm/config/model.py``) derives it: the smallest
    of the length keys of config.json, ``model_max_length`` overriding, capped by the tokenizer's
    ``model_max_length``, times a RoPE scaling factor (``llama3``, ``longrope`` and ``su`` excepted;
    ``yarn`` scales ``original_max_position_embeddings``). ``inf`` when no key is present."""
    text = _text_config(config)
    derived, key = float("inf"), "none"
    for k in _MAX_LEN_KEYS:
        if text.get(k) is not None and text[k] < derived:
            derived, key = text[k], k
    if text.get("model_max_length"):
        derived, key = text["model_max_length"], "model_max_length"
    if tokenizer_config and tokenizer_config.get("model_max_length") is not None:
        if tokenizer_config["model_max_length"] < derived:
            derived, key = tokenizer_config["model_max_length"], "tokenizer_config.json model_max_length"
    if derived == float("inf"):
        return derived, key
    rope = next((c[k] for c in (config, text) for k in ("rope_parameters", "rope_scaling") if c.get(k)), None)
    if isinstance(rope, dict) and rope:
        rope_type = rope.get("rope_type", rope.get("type", "default"))
        if rope_type not in ("su", "longrope", "llama3"):
            if rope_type == "yarn":
                derived = rope["original_max_position_embeddings"]
            derived *= rope.get("factor") or 1.0
    return derived, key


def _read_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def engine_problems(
    model_dir_or_config, tensor_parallel: int, max_model_len: int, chat_template_name: str, tokenizer_dir
) -> list[str]:
    """Why a vLLM 0.24 engine for this model would refuse to start or to chat (empty: it would not),
    checked from config.json (``model_dir_or_config``: the model directory, or its config as a dict)
    and tokenizer_config.json (``tokenizer_dir``; ``None`` skips the tokenizer checks). These are
    exactly the refusals of the test stand-in (``tests/vllm_standin.py``), each vLLM's own:

    * attention heads not divisible by ``tensor_parallel`` (``vllm/config/model.py``,
      ``verify_with_parallel_config``), and KV heads neither dividing nor divided by it
      (``vllm/distributed/utils.py`` ``divide``, from ``QKVParallelLinear``);
    * ``max_model_len`` (prompt + answer tokens the job needs) over the model's context
      (``max_context``; ``vllm/config/model.py``, ``_get_and_verify_max_len``);
    * the prompt format not served by the tokenizer (``check``), which ``LLM.chat`` would refuse.
    """
    if isinstance(model_dir_or_config, dict):
        config, where = model_dir_or_config, "config.json"
    else:
        where = str(Path(model_dir_or_config) / "config.json")
        config = _read_json(Path(where))
        if config is None:
            return [f"{where}: not found"]
    problems = []
    text = _text_config(config)
    heads = text.get("num_attention_heads")
    if not isinstance(tensor_parallel, int) or tensor_parallel < 1:
        problems.append(f"tensor_parallel must be a positive integer, got {tensor_parallel!r}")
    elif not heads:
        problems.append(f"{where}: no num_attention_heads; vLLM cannot check the tensor-parallel size")
    else:
        if heads % tensor_parallel:
            problems.append(
                f"tensor_parallel {tensor_parallel}: vLLM 0.24 refuses it: Total number of attention heads ({heads}) "
                f"must be divisible by tensor parallel size ({tensor_parallel}). (vllm/config/model.py)"
            )
        kv = text.get("num_key_value_heads") or heads
        a, b = (tensor_parallel, kv) if tensor_parallel >= kv else (kv, tensor_parallel)
        if a % b:
            problems.append(
                f"tensor_parallel {tensor_parallel}: vLLM 0.24 cannot shard {kv} key/value heads over it: "
                f"{a} is not divisible by {b} (vllm/distributed/utils.py, from QKVParallelLinear)"
            )
    tokenizer_config = _read_json(Path(tokenizer_dir) / "tokenizer_config.json") if tokenizer_dir else None
    cap, key = max_context(config, tokenizer_config)
    allowed = config.get("model_max_length")  # vLLM lets a user go up to config.json's model_max_length
    if max_model_len > cap and (allowed is None or max_model_len > allowed):
        problems.append(
            f"max_model_len {max_model_len} (prompt + answer tokens) is over the model's context "
            f"({key} gives {cap:g}): "
            f"vLLM 0.24 refuses it: User-specified max_model_len ({max_model_len}) is greater than the derived "
            f"max_model_len ... (vllm/config/model.py); shorten the answers or the prompts"
        )
    if tokenizer_dir is not None:
        problems += check(chat_template_name, tokenizer_dir)
    elif chat_template_name not in FORMATS:
        problems.append(f"unknown prompt format {chat_template_name!r}; formats are {sorted(FORMATS)}")
    return problems
