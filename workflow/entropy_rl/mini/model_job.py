"""The build_mini_model rule's job: a tiny Hugging Face model, pre-trained on the mini task corpus and saved like a
hub model (``models``); an instruct model is its base model tuned further on instruction-style worked solutions
(Appendix D). Its starting pass rates are checked, so a model that solves nothing is caught here, not after RL."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..core import atomic, formats, logs, model_size
from ..core.evaluation import Protocol
from . import evaluate, models


def starting_pass_rates(
    model, tok, benchmarks: list[str], protocols: dict[str, Protocol], max_new_tokens: int, seed: int
) -> dict[str, float]:
    """The model's pass rate on each benchmark file, by its name, each benchmark's samples drawn from ``seed`` (as
    mini.evaluate draws a run's): the same on every run, whichever process the job runs in (a warm server's fork, whose
    generator holds what its imports drew, or a fresh interpreter)."""
    pass_rates = {}
    for path in benchmarks:
        name = Path(path).stem
        torch.manual_seed(seed)
        frame = formats.load_verl_parquet(path)
        p, a = formats.prompts_and_answers(frame)
        styles = formats.problem_styles(frame)
        pass_rates[name] = evaluate.accuracy(model, tok, p, a, styles, protocols[name], max_new_tokens)
    return pass_rates


def main(snakemake) -> None:
    log = logs.setup(snakemake.log[0], snakemake.threads)
    arch, settings, inputs = snakemake.params.arch, snakemake.params.pretrain, snakemake.input
    # A replicate (core.spec.with_replicates) is its model under its own pre-training seed.
    name = arch.get("replicate_of", snakemake.wildcards.model)
    seed = models.model_seed(name, arch.get("pretrain_seed", settings["seed"]))
    if "instruct_of" in arch:  # an instruct model: its base model, tuned further on instruction-style solutions
        model, tok = models.load(inputs.base)
        corpus = formats.load_verl_parquet(inputs.instruct)
    else:
        model, tok = models.build_mini_model(arch["family"], arch, inputs.tokenizer, seed)
        corpus = formats.load_verl_parquet(inputs.corpus)
    prompts, _ = formats.prompts_and_answers(corpus)
    precision = models.pretrain_precision(settings["precision"])
    log.info("pre-training in %s", precision)
    responses = list(corpus["response"])
    steps, batch_size, lr = settings["steps"], settings["batch_size"], settings["lr"]
    losses = models.pretrain(model, tok, prompts, responses, steps, batch_size, lr, seed, precision)
    p = snakemake.params
    protocols = {name: Protocol(**protocol) for name, protocol in p.protocols.items()}
    pass_rates = starting_pass_rates(model, tok, inputs.benchmarks, protocols, p.max_new_tokens, seed)
    log.info("starting pass rates %s", pass_rates)
    if max(pass_rates.values()) == 0:
        raise RuntimeError(f"pre-trained model solves no benchmark problem; raise pretrain.steps ({pass_rates})")
    meta = {
        "family": arch["family"],
        "seed": seed,
        "arch": arch,
        "tuned_from": arch.get("instruct_of"),
        "non_embedding_params": model_size.non_embedding_params(model.config.to_dict()),
        "pretrain_precision": precision,
        "pretrain_final_loss": losses[-1],
        "starting_pass_rates": pass_rates,
    }
    with atomic.output(snakemake.output[0]) as out:
        model.save_pretrained(out)
        tok.save_pretrained(out)
        (out / "mini_model.json").write_text(json.dumps(meta, indent=2))
