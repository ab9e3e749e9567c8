"""The passes a trainer's model really runs, counted on its own calls: each forward's tokens, with gradients or
without, and each backward's through the model's logits. The verl 0.9.1 plugin counts its workers' models so
(``verl_plugin.SummedCountsWorker``); tests/prime_passes_child.py counts PRIME's implicit PRM and its reference so.
The estimate charges a trained token ``paper.cost.step.train_passes`` forward-pass equivalents; these counts, a
backward weighing two, are what it is held to."""

from __future__ import annotations

PASSES = ("forward", "train_forward", "backward")  # tokens through a forward without gradients, with, and backward


def counter() -> dict[str, int]:
    return dict.fromkeys(PASSES, 0)


def count_passes(module, counts: dict) -> None:
    """Count into ``counts`` the tokens each forward of ``module`` reads (called as a Hugging Face model is:
    ``module(input_ids=..., attention_mask=..., ...)``; packed sequences, without a mask, are every one real), with or
    without gradients, and those each backward through its logits carries."""
    import torch

    def forward(_, args, kwargs, output):
        ids, mask = kwargs.get("input_ids", args[0] if args else None), kwargs.get("attention_mask")
        tokens = int(mask.sum()) if mask is not None else int(ids.numel())
        logits = getattr(output, "logits", None)
        if torch.is_grad_enabled() and logits is not None and logits.requires_grad:
            counts["train_forward"] += tokens
            logits.register_hook(lambda grad: counts.__setitem__("backward", counts["backward"] + tokens))
        else:
            counts["forward"] += tokens

    module.register_forward_hook(forward, with_kwargs=True)


def forward_equivalents(counts: dict) -> int:
    """Forward passes' worth of tokens: a backward costs two forwards."""
    return counts["forward"] + counts["train_forward"] + 2 * counts["backward"]
