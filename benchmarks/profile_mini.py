"""Where one mini pre-training and one mini RL run spend their time, phase by phase.

    python benchmarks/profile_mini.py [--model qwen2-m] [--run qwen2-m-grpo] [--study results]

Runs the workflow's own code (``models.pretrain``, ``trainer.train``) with the settings of
config.yaml, on one CPU thread as the jobs do, and prints seconds per phase as a tree (a
phase's time includes its children; "other" is what no named phase covers). The phases are
timed by wrapping the functions that make them up, so the code under test is unchanged.

Without ``--study`` it builds what it needs in a temporary directory (data, tokenizer, the
pre-trained model), which is the pre-training profile; with ``--study`` it takes them from a
finished study and profiles only the RL run. ``--steps`` and ``--pretrain-steps`` shorten both;
``--precision`` sets pre-training's (bf16 against fp32: ``--precision fp32`` beside the config's ``auto``).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
IMPORT = "entropy_rl.mini.trainer"


class Phases:
    """Inclusive wall time per path of nested phases, e.g. ``update/ppo epochs/backward``."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.calls: dict[str, int] = collections.defaultdict(int)

    @contextlib.contextmanager
    def phase(self, name: str):
        self.stack.append(name)
        key, t0 = "/".join(self.stack), time.perf_counter()
        try:
            yield
        finally:
            self.seconds[key] += time.perf_counter() - t0
            self.calls[key] += 1
            self.stack.pop()

    @contextlib.contextmanager
    def wrapping(self, *targets: tuple[object, str, str]):
        """Time every call of ``owner.attr`` as phase ``name`` while the block runs."""
        saved = []
        for owner, attr, name in targets:
            original = getattr(owner, attr)

            def timed(*args, _original=original, _name=name, **kwargs):
                with self.phase(_name):
                    return _original(*args, **kwargs)

            saved.append((owner, attr, original))
            setattr(owner, attr, functools.wraps(original)(timed))
        try:
            yield
        finally:
            for owner, attr, original in reversed(saved):
                setattr(owner, attr, original)

    def report(self, title: str, total: float) -> None:
        print(f"\n{title}: {total:.1f} s")
        children = collections.defaultdict(list)
        for key in self.seconds:
            parent, _, _ = key.rpartition("/")
            children[parent].append(key)

        def show(parent: str, depth: int, budget: float) -> None:
            keys = sorted(children.get(parent, []), key=lambda k: -self.seconds[k])
            for key in keys:
                name, s = key.rpartition("/")[2], self.seconds[key]
                print(
                    f"  {'  ' * depth}{name:<{34 - 2 * depth}} {s:8.2f} s {100 * s / total:5.1f}%  ({self.calls[key]} calls)"
                )
                show(key, depth + 1, s)
            if keys:
                rest = budget - sum(self.seconds[k] for k in keys)
                print(f"  {'  ' * depth}{'other':<{34 - 2 * depth}} {rest:8.2f} s {100 * rest / total:5.1f}%")

        show("", 0, total)


def import_seconds(module: str) -> dict[str, float]:
    """Cumulative import time of ``module`` in a fresh interpreter, by top-level package (``-X importtime``)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stderr
    top = collections.defaultdict(float)
    for line in out.splitlines():  # "import time: self [us] | cumulative | name": sum self times by package
        parts = line.split("|")
        if len(parts) == 3 and parts[0].rpartition(":")[2].strip().isdigit():
            top[parts[2].strip().split(".")[0]] += int(parts[0].rpartition(":")[2]) / 1e6
    return dict(top)


def prepare(cfg: dict, model: str, steps: int | None, tmp: Path, precision: str | None = None) -> tuple[dict, Path]:
    """Data, tokenizer and a pre-trained ``model`` in ``tmp``, the pre-training profiled."""
    from entropy_rl.core import formats
    from entropy_rl.mini import data, evaluate, models, tokenizer

    paths = data.prepare_mini_data({k: v for k, v in cfg["data"].items() if k != "train_sets"}, tmp / "data")
    bench = {name: str(path) for name, path in paths.items() if name in cfg["data"]["benchmarks"]}
    corpus = formats.load_verl_parquet(paths["pretrain"])
    prompts, _ = formats.prompts_and_answers(corpus)
    texts = [p[-1]["content"] + r for p, r in zip(prompts, corpus["response"])] + ["Question: Answer:"]
    tokenizer.build_tokenizer(texts, cfg["tokenizer"]["vocab_size"]).save_pretrained(tmp / "tokenizer")

    arch, settings = cfg["models"][model], dict(cfg["pretrain"])
    settings["steps"] = steps or settings["steps"]
    precision = models.pretrain_precision(precision or settings["precision"])
    seed = models.model_seed(model, settings["seed"])
    prof = Phases()
    t0 = time.perf_counter()
    with prof.wrapping(
        (models, "build_mini_model", "build"),
        (models, "pretrain", "pretrain"),
        (models, "sft_batch", "batch"),
        (evaluate, "accuracy", "starting pass rates"),
    ):
        policy, tok = models.build_mini_model(arch["family"], arch, tmp / "tokenizer", seed)
        with prof.wrapping(*training_ops(policy)):
            models.pretrain(
                policy,
                tok,
                prompts,
                list(corpus["response"]),
                settings["steps"],
                settings["batch_size"],
                settings["lr"],
                seed,
                precision,
            )
        rates = {}
        for name, path in sorted(bench.items()):
            frame = formats.load_verl_parquet(path)
            p, a = formats.prompts_and_answers(frame)
            rates[name] = round(
                evaluate.accuracy(
                    policy,
                    tok,
                    p,
                    a,
                    formats.problem_styles(frame),
                    cfg["data"]["benchmarks"][name]["protocol"],
                    cfg["eval"]["max_new_tokens"],
                ),
                3,
            )
    prof.report(
        f"pre-training {model}, {settings['steps']} steps of {settings['batch_size']} in {precision}",
        time.perf_counter() - t0,
    )
    print(f"  starting pass rates {json.dumps(rates)}")
    policy.save_pretrained(tmp / "model")
    tok.save_pretrained(tmp / "model")
    return {"train": str(paths["train"]), "benchmarks": bench}, tmp / "model"


def training_ops(model):
    """The three parts of an optimisation step: the forward to the loss, backward, the optimiser."""
    import torch
    from entropy_rl.mini import models

    # the loss's forward: models.response_loss where pre-training has it, else the model's own forward
    forward = (
        (models, "response_loss", "forward") if hasattr(models, "response_loss") else (model, "forward", "forward")
    )
    return (forward, (torch.Tensor, "backward", "backward"), (torch.optim.AdamW, "step", "optimizer step"))


def profile_run(cfg: dict, run: str, data_paths: dict, model_dir: Path, steps: int | None, out: Path) -> None:
    from entropy_rl.core import metrics, reward, spec
    from entropy_rl.core.run import resolve
    from entropy_rl.mini import algorithms, checkpoints, generation, trainer

    resolved = resolve(cfg, run)
    resolved = resolved.but(steps=steps or resolved.steps)
    prof = Phases()
    t0 = time.perf_counter()
    domain = spec.domain_benchmarks(cfg, spec.train_domain(cfg, run))  # what the run validates on
    val_sets = trainer.validation_sets(
        {b: data_paths["benchmarks"][b] for b in domain}, resolved.val_protocol, resolved.val_size
    )
    import torch

    with prof.wrapping(
        (trainer, "set_up", "load"),
        (trainer, "sample_batch", "rollout"),
        (generation, "generate", "generate"),
        (reward, "verdicts", "grade"),
        (generation, "forward_response", "log-prob forward"),
        (trainer, "validate", "validation"),
        (trainer, "update_policy", "update"),
        (trainer, "ppo_epochs", "ppo epochs"),
        (algorithms, "actor_loss", "verl actor loss"),
        (torch.Tensor, "backward", "backward"),
        (torch.optim.AdamW, "step", "optimizer step"),
        (metrics, "policy_entropy", "measures"),
        (metrics, "covariance_summary", "measures"),
        (metrics, "bandit_covariance", "measures"),
        (metrics, "loss_token_stats", "measures"),
        (checkpoints, "save", "checkpointing"),
        (trainer, "finish", "saving"),
    ):
        frame = trainer.train(resolved, model_dir, data_paths["train"], val_sets, out)
    total = time.perf_counter() - t0
    prof.report(f"RL run {run} ({resolved.algorithm}), {resolved.steps} steps", total)
    last = frame.dropna(subset=["val_acc"])
    print(
        f"  validation accuracy {last['val_acc'].iloc[0]:.3f} -> {last['val_acc'].iloc[-1]:.3f}, "
        f"entropy {frame['entropy'].iloc[0]:.3f} -> {frame['entropy'].iloc[-1]:.3f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="qwen2-m", help="the model to pre-train (without --study)")
    ap.add_argument("--run", default=None, help="the RL run to profile (default: <model>-grpo)")
    ap.add_argument("--study", type=Path, help="take data and the pre-trained model from this results/ directory")
    ap.add_argument("--steps", type=int, help="RL steps (default: the config's)")
    ap.add_argument("--pretrain-steps", type=int, help="pre-training steps (default: the config's)")
    ap.add_argument(
        "--precision", choices=["auto", "bf16", "fp32"], help="pre-training's precision (default: the config's)"
    )
    args = ap.parse_args()

    t0 = time.perf_counter()
    import entropy_rl.mini.trainer  # noqa: F401  (the jobs' import, timed below in a fresh interpreter)
    import torch

    torch.set_num_threads(1)  # as every mini job (threads: 1)
    torch.manual_seed(0)
    imports = import_seconds(IMPORT)
    print(
        f"imports: `import {IMPORT}` in a fresh interpreter, {sum(imports.values()):.2f} s (here {time.perf_counter() - t0:.2f} s)"
    )
    for name, s in sorted(imports.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {name:<34} {s:8.2f} s")

    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())["mini"]
    run = args.run or f"{args.model}-grpo"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.study:
            bench = {p.stem: str(p) for p in sorted((args.study / "data" / "benchmarks").glob("*.parquet"))}
            data_paths = {"train": str(args.study / "data" / "train.parquet"), "benchmarks": bench}
            model_dir = args.study / "models" / cfg["runs"][run]["model"]
        else:
            data_paths, model_dir = prepare(cfg, cfg["runs"][run]["model"], args.pretrain_steps, tmp, args.precision)
        profile_run(cfg, run, data_paths, model_dir, args.steps, tmp / "run")


if __name__ == "__main__":
    main()
