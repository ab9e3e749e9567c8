"""A run's checkpoint folder in each case a cluster produces, through a checkout's launch preparation, and what one
training job asks SLURM for: an empty marker, a marker naming a missing save, a hollow save (verl's retention took its
actor), saves piling up over relaunches, saves with no marker (async_save), and the jobs' time limit.

    python benchmarks/checkpoint_cases.py <checkout>/workflow

Run it on two checkouts (``git worktree add /tmp/old <rev>``) to compare them; it prints one line per case.
"""

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, sys.argv[1])
import yaml
from entropy_rl.paper import verl_checkpoints as vc


def save(ckpt, k, whole=True):
    d = ckpt / f"global_step_{k}"
    (d / "actor").mkdir(parents=True, exist_ok=True)
    if whole:
        for kind in ("model", "optim", "extra_state"):
            (d / "actor" / f"{kind}_world_size_1_rank_0.pt").write_text(str(k))
    (d / "data.pt").write_text(str(k))


def logged(ckpt, upto):
    (ckpt / "verl_log.1.jsonl").write_text("".join(json.dumps({"step": s, "data": {}}) + "\n" for s in range(upto + 1)))


def run(case, fn):
    ckpt = Path(tempfile.mkdtemp()) / "checkpoints"
    ckpt.mkdir()
    try:
        print(case, "->", fn(ckpt))
    except Exception as e:  # noqa: BLE001 - a case that raises: the exception is its result
        print(case, "->", type(e).__name__, e)


def empty_marker(ckpt):
    for k in (2, 4, 6):
        save(ckpt, k)
    logged(ckpt, 6)
    (ckpt / "latest_checkpointed_iteration.txt").write_text("")
    p = vc.prepare_launch(ckpt)
    return f"removed {[x.name for x in p.removed]}, left {sorted(x.name for x in ckpt.glob('global_step_*'))}, marker {(ckpt / 'latest_checkpointed_iteration.txt').read_text()!r}"


def missing_marker_target(ckpt):
    for k in (2, 4):
        save(ckpt, k)
    logged(ckpt, 4)
    (ckpt / "latest_checkpointed_iteration.txt").write_text("9")
    p = vc.prepare_launch(ckpt)
    return f"resume {p.resume} (verl: global_step_9 missing -> starts from scratch); left {sorted(x.name for x in ckpt.glob('global_step_*'))}"


def hollow(ckpt):
    save(ckpt, 2)
    save(ckpt, 3, whole=False)
    save(ckpt, 4)
    logged(ckpt, 3)
    (ckpt / "latest_checkpointed_iteration.txt").write_text("4")
    p = vc.prepare_launch(ckpt)
    m = (ckpt / "latest_checkpointed_iteration.txt").read_text()
    return f"resume {p.resume}, marker -> global_step_{m}, which has actor shards: {any((ckpt / f'global_step_{m}' / 'actor').glob('model_*'))}"


def pile(ckpt):
    for launch in range(4):  # each launch saves two steps, keeps all; the next launch prepares
        for k in (2 * launch + 1, 2 * launch + 2):
            save(ckpt, k)
        logged(ckpt, 2 * launch + 2)
        (ckpt / "latest_checkpointed_iteration.txt").write_text(str(2 * launch + 2))
        vc.prepare_launch(
            ckpt, **({"keep": 2} if "keep" in __import__("inspect").signature(vc.prepare_launch).parameters else {})
        )
    return f"saves held after 4 launches: {len(list(ckpt.glob('global_step_*')))}"


def async_save(ckpt):
    for k in (2, 4):
        save(ckpt, k)  # async_save: verl writes no marker
    logged(ckpt, 4)
    p = vc.prepare_launch(ckpt)
    return f"removed {[x.name for x in p.removed]}"


for case, fn in [
    ("2 empty marker", empty_marker),
    ("2 marker names a missing save", missing_marker_target),
    ("3 hollow save", hollow),
    ("4 saves pile up", pile),
    ("6 async_save (no marker)", async_save),
]:
    run(case, fn)

from entropy_rl.core import spec as run_spec
from entropy_rl.core.scale import build
from entropy_rl.paper import run_command
from entropy_rl.paper.cost import budget
from entropy_rl.pipeline import resources

S = run_spec.with_instruct_models(yaml.safe_load((Path(sys.argv[1]).parent / "config.yaml").read_text())["paper"])
scale = build("paper", S)
hours = budget.job_hours(scale)
for run in ("qwen2.5-7b-grpo", "qwen2.5-32b-grpo", "qwen2.5-7b-prime"):
    margin = S["budget"]["walltime_margin"]
    longest = resources.max_job_minutes(scale)
    r = resources.train_resources(scale.placement(run), hours[f"train:{run}"], margin, "--export-file=x", longest)
    print(f"5 {run}: one SLURM job asks for {r['runtime'] / 60:.0f} h", f"(estimate {hours[f'train:{run}']:.0f} GPU-h)")

try:
    site = {**S, "launch": {"verl_overrides": ["actor_rollout_ref.actor.checkpoint.async_save=true"]}}
    run_command.launch_of(build("paper", site), "qwen2.5-7b-grpo")
    print("6 async_save in launch.verl_overrides: accepted")
except ValueError as e:
    print("6 async_save in launch.verl_overrides: refused:", str(e)[:100])
