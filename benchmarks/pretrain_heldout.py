"""Pre-training's loss on a held-out corpus as it goes: whether it has stopped improving before the configured steps.

    python benchmarks/pretrain_heldout.py [--model qwen2-m] [--every 100] [--precision auto]

Builds config.yaml's mini data and tokenizer in a temporary directory, and a held-out corpus drawn as the
pre-training corpus is (the same task families and answer mix: worked solutions, often-wrong direct answers) from
prompts the corpus and the benchmarks never pose. Then pre-trains ``--model`` with the workflow's own
``models.pretrain`` at the configured steps, schedule and precision, on one thread as the jobs do, and every
``--every`` steps measures the mean loss over the whole held-out corpus (no gradient; the model has no dropout, so
this is the loss the next step's weights give). The held-out loss has a floor above zero: a direct answer is wrong
with the corpus's ``wrong_share``, which no model can predict.

Prints the held-out loss by step and, for an early stop that ends pre-training once the held-out loss has improved
by less than ``--min-gain`` (relative) over ``--patience`` steps, the step at which it would have stopped.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))


def heldout_corpus(cfg: dict, seen: set[str], prompts: int):
    """``prompts`` fresh prompts of the pre-training corpus's families, none of them in ``seen``, answered as the
    corpus answers them (one response each)."""
    from entropy_rl.mini import data

    spec = dict(cfg["data"]["pretrain"], repeats=1)
    frame = data.build_training_mix(
        cfg["data"]["benchmarks"], spec["from"], 2 * prompts, cfg["data"]["seed"] + 101, seen, "heldout"
    )
    return data.sft_responses(frame.head(prompts), spec, cfg["data"]["seed"] + 103)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="qwen2-m")
    ap.add_argument("--every", type=int, default=100, help="steps between held-out measurements")
    ap.add_argument("--heldout", type=int, default=512, help="held-out prompts")
    ap.add_argument("--precision", choices=["auto", "bf16", "fp32"], help="default: the config's")
    ap.add_argument("--patience", type=int, default=200, help="steps an early stop waits for a gain")
    ap.add_argument("--min-gain", type=float, default=0.01, help="relative gain it waits for")
    args = ap.parse_args()

    import torch
    from entropy_rl.core import formats, spec
    from entropy_rl.mini import data, models, tokenizer

    torch.set_num_threads(1)
    cfg = spec.with_instruct_models(yaml.safe_load((ROOT / "config.yaml").read_text())["mini"])
    settings = spec.pretrain_settings(cfg, args.model)
    precision = models.pretrain_precision(args.precision or settings["precision"])
    with tempfile.TemporaryDirectory() as tmp:
        paths = data.prepare_mini_data({k: v for k, v in cfg["data"].items() if k != "train_sets"}, tmp)
        corpus = formats.load_verl_parquet(paths["pretrain"])
        prompts, _ = formats.prompts_and_answers(corpus)
        texts = [p[-1]["content"] + r for p, r in zip(prompts, corpus["response"])] + [
            "Question: Answer:"
        ]  # as the rule's
        tokenizer.build_tokenizer(texts, cfg["tokenizer"]["vocab_size"]).save_pretrained(Path(tmp) / "tokenizer")
        seen = {data.prompt_text(p) for p in corpus["prompt"]}
        for name in cfg["data"]["benchmarks"]:
            seen |= {data.prompt_text(p) for p in formats.load_verl_parquet(paths[name])["prompt"]}
        heldout = heldout_corpus(cfg, seen, args.heldout)
        arch = cfg["models"][args.model]
        model, tok = models.build_mini_model(
            arch["family"], arch, Path(tmp) / "tokenizer", models.model_seed(args.model, settings["seed"])
        )
        h_prompts, _ = formats.prompts_and_answers(heldout)
        h_batch = models.sft_batch(models.sft_examples(tok, h_prompts, list(heldout["response"])), tok.pad_token_id)

        curve, calls, train_step = [], [0], models.response_loss

        def measured(*a, **kw):  # every --every steps, before that step's update: the held-out loss of these weights
            if calls[0] % args.every == 0:
                with torch.no_grad():
                    curve.append((calls[0], float(train_step(model, *h_batch))))
            calls[0] += 1
            return train_step(*a, **kw)

        models.response_loss, t0 = measured, time.perf_counter()
        try:
            losses = models.pretrain(
                model,
                tok,
                prompts,
                list(corpus["response"]),
                settings["steps"],
                settings["batch_size"],
                settings["lr"],
                models.model_seed(args.model, settings["seed"]),
                precision,
            )
        finally:
            models.response_loss = train_step
        with torch.no_grad():
            curve.append((settings["steps"], float(train_step(model, *h_batch))))
    print(
        f"{args.model}: {settings['steps']} steps of {settings['batch_size']} in {precision}, {time.perf_counter() - t0:.0f} s; "
        f"held-out loss over {len(heldout)} fresh prompts every {args.every} steps"
    )
    print(f"{'step':>6} {'held-out':>9} {'train (mean of the last ' + str(args.every) + ')':>30}")
    for step, loss in curve:
        window = losses[max(0, step - args.every) : step] or losses[:1]
        print(f"{step:>6} {loss:9.4f} {sum(window) / len(window):30.4f}")
    stop = next(
        (
            s
            for s, loss in curve
            if any(s0 == s - args.patience and loss > (1 - args.min_gain) * l0 for s0, l0 in curve)
        ),
        None,
    )
    print(
        f"early stop (held-out gain under {100 * args.min_gain:g}% in {args.patience} steps): "
        + (f"at step {stop} of {settings['steps']}" if stop else f"none before step {settings['steps']}")
    )


if __name__ == "__main__":
    main()
