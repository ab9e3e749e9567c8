"""A pre-emption between verl's save of a step and its log of it: the relaunch repeats the step, and the run's table has
every step once (paper.verl_checkpoints, as train_verl.py calls it before each launch)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from entropy_rl.paper import launch, verl_checkpoints, verl_metrics

# verl 0.9.1's fit() in the order that matters here (trainer_base.py): resume from the marker, validate and log before
# training; then each step updates, saves (global_step_k, then the marker) every save_freq steps and at the last,
# validates, and only then logs the step's record. The "weights" are the number of updates, so every logged value says
# which update it followed.
FAKE_VERL = r"""
import json, os, sys, time
ckpt, steps, save_freq, held = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
out = open(os.environ["VERL_FILE_LOGGER_PATH"], "w")  # verl's file logger truncates its file when it starts
marker = os.path.join(ckpt, "latest_checkpointed_iteration.txt")
start = int(open(marker).read()) if os.path.exists(marker) else 0
weights = int(open(os.path.join(ckpt, f"global_step_{start}", "weights")).read()) if start else 0
def record(step, data):
    out.write(json.dumps({"step": step, "data": data}) + "\n")
    out.flush()
record(start, {"val-core/aime/acc/mean@1": weights})
for k in range(start + 1, steps + 1):
    entropy = 1.0 / (1 + weights)  # of the rollout of the policy before update k
    weights += 1
    if k % save_freq == 0 or k == steps:
        os.makedirs(os.path.join(ckpt, f"global_step_{k}"))
        open(os.path.join(ckpt, f"global_step_{k}", "weights"), "w").write(str(weights))
        open(marker, "w").write(str(k))
    if k == held:
        time.sleep(600)  # validation: after the save, before the log; held here until the stop lands
    record(k, {"actor/entropy": entropy, "val-core/aime/acc/mean@1": weights})
"""
STEPS = 6


def launch_fake(ckpt, save_freq=2, stop_once_saved=None) -> int:
    """One launch as train_verl.py makes it: prepared (verl_checkpoints.prepare_launch), then verl, stopped by SIGTERM
    as soon as ``stop_once_saved`` is saved when given (the fake holds that step between its save and its log, so the
    stop lands there whatever the machine's load)."""
    env = {**os.environ, "VERL_FILE_LOGGER_PATH": str(verl_checkpoints.prepare_launch(ckpt).log)}
    cmd = [sys.executable, "-c", FAKE_VERL, str(ckpt), str(STEPS), str(save_freq), str(stop_once_saved or 0)]
    if stop_once_saved is None:
        return subprocess.run(cmd, env=env).returncode
    return launch.run_until_saved(cmd, env, ckpt, stop_once_saved, grace_s=10, poll_s=0.02)


def step_table(ckpt):
    table = verl_metrics.to_metrics_table(verl_metrics.read_attempts(ckpt), ["aime"]).set_index("step")
    print(table[["entropy", "val_acc"]].to_string())
    return table


def assert_every_step_once(table):
    """Row k: the rollout before update k+1 (entropy 1/(1+k)) and the validation after update k (k)."""
    assert list(table.index) == list(range(STEPS + 1))
    assert table["entropy"].iloc[:STEPS].tolist() == pytest.approx([1 / (1 + k) for k in range(STEPS)])
    assert table["val_acc"].tolist() == list(range(STEPS + 1))


def test_a_step_saved_but_not_logged_is_trained_and_logged_again(tmp_path, caplog):
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    assert launch_fake(ckpt, stop_once_saved=4) != 0
    assert launch.saved_step(ckpt) == 4 and verl_checkpoints.logged_step(ckpt) == 3  # stopped between save and log
    with caplog.at_level(logging.WARNING):
        assert launch_fake(ckpt) == 0
    assert "global_step_4 was saved but never logged" in caplog.text and "resumes from global_step_2" in caplog.text
    assert "trains the steps after it again" in caplog.text  # up to save_every steps, not "the lost step"
    assert (ckpt / "unlogged" / "global_step_4" / "weights").read_text() == "4"  # set aside, not deleted
    second = verl_metrics.read_jsonl(verl_metrics.attempt_logs(ckpt)[1])
    assert [r["step"] for r in second] == [2, 3, 4, 5, 6]  # resumed from step 2's checkpoint: 3 and 4 again
    assert_every_step_once(step_table(ckpt))


def test_a_step_lost_twice_and_a_first_save_lost_start_from_what_is_logged(tmp_path):
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    assert launch_fake(ckpt, stop_once_saved=2) != 0  # the first checkpoint, unlogged: nothing to resume from
    moved = verl_checkpoints.set_aside_unlogged(ckpt, verl_checkpoints.logged_step(ckpt))
    assert moved == ([ckpt / "unlogged" / "global_step_2"], 0) and not (ckpt / "latest_checkpointed_iteration.txt").exists()
    assert launch_fake(ckpt, stop_once_saved=2) != 0  # again, from the base model
    assert launch_fake(ckpt, stop_once_saved=4) != 0
    assert launch_fake(ckpt, stop_once_saved=4) != 0  # from step 2 this time, and lost at 4 once more
    # one copy kept, the latest set aside (step 2's two copies went when step 4's came), and the count of each
    assert sorted(p.name for p in (ckpt / "unlogged").iterdir()) == ["global_step_4", "set_aside.json"]
    assert json.loads((ckpt / "unlogged" / "set_aside.json").read_text()) == {"2": 2, "4": 1}
    assert launch_fake(ckpt) == 0
    assert_every_step_once(step_table(ckpt))


def test_a_launch_after_a_clean_stop_moves_nothing(tmp_path):
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    assert launch_fake(ckpt, save_freq=1, stop_once_saved=3) != 0
    assert verl_checkpoints.set_aside_unlogged(ckpt, verl_checkpoints.logged_step(ckpt)) == ([ckpt / "unlogged" / "global_step_3"], 2)
    assert verl_checkpoints.set_aside_unlogged(ckpt, 2) == ([], 2)  # once set aside, nothing more
    assert launch.saved_step(ckpt) == 2


def test_a_last_line_cut_short_does_not_stop_the_relaunch(tmp_path, caplog):
    """A job killed while verl's file logger wrote a line (or a disk full, a network filesystem): the relaunch reads
    every whole record, leaves the torn one out, and repeats its step; a bad line before the last still raises."""
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    assert launch_fake(ckpt, stop_once_saved=4) != 0
    first = verl_metrics.attempt_logs(ckpt)[0]
    with open(first, "a") as fh:
        fh.write('{"step": 4, "data": {"actor/entro')  # the step's record, cut mid-write
    with caplog.at_level(logging.WARNING):
        assert verl_checkpoints.logged_step(ckpt) == 3
        assert launch_fake(ckpt) == 0
    assert "its last line is cut short" in caplog.text
    assert_every_step_once(step_table(ckpt))
    lines = first.read_text().splitlines()
    first.write_text("\n".join([lines[0][:10], *lines[1:]]) + "\n")  # the first line bad, not the last
    with pytest.raises(ValueError, match="line 1 of .* is not JSON, and not the last"):
        verl_metrics.read_attempts(ckpt)


def test_the_same_step_lost_again_and_again_stops_the_job(tmp_path):
    """A failure after step 4's save that repeats: set aside twice, each relaunch retraining from step 2; the third
    time the launch stops, naming the step and the log, and moves nothing."""
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    for _ in range(3):
        assert launch_fake(ckpt, stop_once_saved=4) != 0
    assert json.loads((ckpt / "unlogged" / "set_aside.json").read_text()) == {"4": 2}
    with pytest.raises(verl_checkpoints.RepeatedLoss, match=r"step 4 was saved and never logged 3 times.*verl_log\.3\.jsonl"):
        verl_checkpoints.prepare_launch(ckpt)
    assert (ckpt / "global_step_4").is_dir() and launch.saved_step(ckpt) == 4  # nothing moved


def test_a_save_cut_short_is_removed_and_never_resumed_from(tmp_path, caplog):
    """verl writes its marker once a save is whole: a directory newer than the marker was cut short. It is removed,
    not set aside as an unlogged step, and the launch resumes from the marker's save."""
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    assert launch_fake(ckpt, stop_once_saved=4) != 0  # step 4 whole (marker 4), logged through 3
    (ckpt / "global_step_6").mkdir()  # a save of step 6 begun, cut short: no weights, marker still 4
    (ckpt / "global_step_5").mkdir()  # and one below it
    with caplog.at_level(logging.WARNING):
        prepared = verl_checkpoints.prepare_launch(ckpt)
    assert [p.name for p in prepared.removed] == ["global_step_5", "global_step_6"] and "cut short" in caplog.text
    assert [p.name for p in prepared.set_aside] == ["global_step_4"]  # whole but never logged: set aside
    assert prepared.resume == 2 == launch.saved_step(ckpt) and verl_checkpoints.saved_steps(ckpt) == [2]


def test_the_launch_says_what_verl_will_load():
    assert verl_checkpoints.launch_words(True, 4) == "resuming from global_step_4"
    # checkpoints kept, but every save set aside: verl starts from the base model, and the log says so
    assert verl_checkpoints.launch_words(True, 0).startswith("starting from the base model (no save")
    assert verl_checkpoints.launch_words(False, 0) == "starting from the base model"

