"""Run in a child whose verl is 0.4.1 and whose ``recipe`` is verl's tag v0.4.1 (tests/paper/cost/test_prime_passes.py): what
one PRIME step computes beyond a GRPO step, counted on the recipe's own code. Its implicit PRM
(``recipe/prime/prime_dp_rm.DataParallelPRIMERewardModel``, on two tiny models standing in for the PRM and its frozen
reference) runs the two calls the recipe's fit makes with ``reward_model.model.update: before`` (``update_rm``, then
``compute_rm_score``), every model call counted by ``entropy_rl.paper.pass_counts``; the recipe's
``filter_and_downsample`` keeps its share of an oversampled batch. Writes the counts as JSON to argv[1].

flash-attn, which the module imports at its top and calls only to pack sequences (``use_remove_padding``), is absent
on a CPU: a module of that name stands in, and packing is off, so it is never called."""

import importlib.machinery
import json
import sys
import types
from pathlib import Path

import torch

if "flash_attn" not in sys.modules:  # imported by prime_dp_rm at its top; used only with use_remove_padding
    bert_padding = types.ModuleType("flash_attn.bert_padding")
    for name in ("index_first_axis", "pad_input", "rearrange", "unpad_input"):
        setattr(bert_padding, name, None)
    package = types.ModuleType("flash_attn")
    package.__spec__ = importlib.machinery.ModuleSpec("flash_attn", None)  # transformers looks it up, finds no version
    bert_padding.__spec__ = importlib.machinery.ModuleSpec("flash_attn.bert_padding", None)
    sys.modules["flash_attn"], sys.modules["flash_attn.bert_padding"] = package, bert_padding

import recipe.prime  # noqa: E402
from entropy_rl.paper import pass_counts  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from recipe.prime.prime_dp_rm import DataParallelPRIMERewardModel  # noqa: E402
from recipe.prime.prime_ray_trainer import RayPRIMETrainer  # noqa: E402
from verl import DataProto  # noqa: E402

VOCAB, PROMPT, RESPONSE, N, PROMPTS = 32, 6, 10, 4, 8


class Tiny(torch.nn.Module):
    """A causal LM's interface (``module(input_ids=..., attention_mask=..., position_ids=..., use_cache=...)``, an
    output with ``.logits``) in a few weights."""

    def __init__(self, seed: int):
        super().__init__()
        torch.manual_seed(seed)
        self.embed, self.head = torch.nn.Embedding(VOCAB, 8), torch.nn.Linear(8, VOCAB)

    def forward(self, input_ids, attention_mask=None, position_ids=None, use_cache=False, return_dict=False):
        return types.SimpleNamespace(logits=self.head(self.embed(input_ids)))


def batch(prompts: int) -> DataProto:
    """``prompts`` × N answers, each response of its own length (the rest padding), half of them right."""
    generator = torch.Generator().manual_seed(0)
    rows = prompts * N
    input_ids = torch.randint(0, VOCAB, (rows, PROMPT + RESPONSE), generator=generator)
    lengths = torch.randint(2, RESPONSE + 1, (rows,), generator=generator)
    attention_mask = torch.ones(rows, PROMPT + RESPONSE, dtype=torch.long)
    for i, n in enumerate(lengths.tolist()):
        attention_mask[i, PROMPT + n :] = 0
    return DataProto.from_dict(
        {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "responses": input_ids[:, PROMPT:],
            "prompts": input_ids[:, :PROMPT],
            "position_ids": torch.arange(PROMPT + RESPONSE).expand(rows, -1).clone(),
            "acc": (torch.arange(rows) % 2).float(),
        },
        meta_info={"micro_batch_size": 8, "use_dynamic_bsz": False},
    )


def main(out: str) -> None:
    defaults = OmegaConf.load(Path(recipe.prime.__file__).parent / "config" / "prime_trainer.yaml")
    config = OmegaConf.create(
        {
            "model": {
                "use_remove_padding": False,
                "use_fused_kernels": False,
                "beta_train": 0.05,
                "loss_type": "ce",
                "optim": {"grad_clip": 10.0},
            },
            "mini_batch_size": PROMPTS * N,
            "micro_batch_size_per_gpu": 8,
            "use_dynamic_bsz": False,
            "prime_granularity": "token",
            "prime_norm": "batch_norm",
        }
    )
    prm, reference = Tiny(1), Tiny(2)
    counts = {"prm": pass_counts.counter(), "reference": pass_counts.counter()}
    pass_counts.count_passes(prm, counts["prm"])
    pass_counts.count_passes(reference, counts["reference"])
    rm = DataParallelPRIMERewardModel(config, prm, reference, torch.optim.AdamW(prm.parameters(), lr=1e-6))
    # a step's oversampled batch, downsampled by the recipe's own filter to what it trains on
    trainer = object.__new__(RayPRIMETrainer)
    trainer.config = OmegaConf.create(
        {
            "actor_rollout_ref": {"rollout": {"n": N}},
            "data": {**OmegaConf.to_container(defaults.data), "max_response_length": RESPONSE},
        }
    )
    generated = batch(int(PROMPTS * defaults.data.oversample_factor))
    scores = generated.batch["acc"].tolist()
    trained = trainer.filter_and_downsample(scores, generated)
    trained.meta_info.update({"micro_batch_size": 8, "use_dynamic_bsz": False})
    # prime_ray_trainer.fit, update "before": update_rm, then compute_rm_score, on the batch it trains on
    assert defaults.reward_model.model["update"] == "before"
    rm.update_rm(trained)
    rm.compute_rm_score(trained)
    tokens = int(trained.batch["attention_mask"].sum())
    result = {
        "oversample_factor": defaults.data.oversample_factor,
        "generated_answers": len(scores),
        "trained_answers": len(trained),
        "trained_tokens": tokens,
        "counts": counts,
        "forward_equivalents": sum(pass_counts.forward_equivalents(c) for c in counts.values()) / tokens,
    }
    Path(out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(*sys.argv[1:])
