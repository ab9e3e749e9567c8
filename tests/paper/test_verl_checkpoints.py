"""A pre-emption between verl's save of a step and its log of it: the relaunch repeats the step, and the run's table has
every step once (paper.verl_checkpoints, as train_job.main calls it before each launch)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from entropy_rl.paper import launch, saves, verl_checkpoints, verl_metrics

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
        save = os.path.join(ckpt, f"global_step_{k}")
        os.makedirs(os.path.join(save, "actor"))
        for kind in ("model", "optim", "extra_state"):  # the FSDP checkpoint manager's shards, one rank
            open(os.path.join(save, "actor", f"{kind}_world_size_1_rank_0.pt"), "w").write(str(weights))
        open(os.path.join(save, "data.pt"), "w").write(str(k))  # the dataloader's state
        open(os.path.join(save, "weights"), "w").write(str(weights))
        open(marker, "w").write(str(k))
    if k == held:
        time.sleep(600)  # validation: after the save, before the log; held here until the stop lands
    record(k, {"actor/entropy": entropy, "val-core/aime/acc/mean@1": weights})
"""
STEPS = 6


def launch_fake(ckpt, save_freq=2, stop_once_saved=None, keep=0) -> int:
    """One launch as train_job.main makes it: prepared (verl_checkpoints.prepare_launch), then verl, stopped by SIGTERM
    as soon as ``stop_once_saved`` is saved when given (the fake holds that step between its save and its log, so the
    stop lands there whatever the machine's load)."""
    env = {**os.environ, "VERL_FILE_LOGGER_PATH": str(verl_checkpoints.prepare_launch(ckpt, keep=keep).log)}
    cmd = [sys.executable, "-c", FAKE_VERL, str(ckpt), str(STEPS), str(save_freq), str(stop_once_saved or 0)]
    if stop_once_saved is None:
        return subprocess.run(cmd, check=False, env=env).returncode
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
    assert saves.completed_step(ckpt) == 4 and verl_checkpoints.logged_step(ckpt) == 3  # stopped between save and log
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
    assert (
        moved == ([ckpt / "unlogged" / "global_step_2"], 0)
        and not (ckpt / "latest_checkpointed_iteration.txt").exists()
    )
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
    assert verl_checkpoints.set_aside_unlogged(ckpt, verl_checkpoints.logged_step(ckpt)) == (
        [ckpt / "unlogged" / "global_step_3"],
        2,
    )
    assert verl_checkpoints.set_aside_unlogged(ckpt, 2) == ([], 2)  # once set aside, nothing more
    assert saves.completed_step(ckpt) == 2


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
    with pytest.raises(
        verl_checkpoints.RepeatedLoss, match=r"step 4 was saved and never logged 3 times.*verl_log\.3\.jsonl"
    ):
        verl_checkpoints.prepare_launch(ckpt)
    assert (ckpt / "global_step_4").is_dir() and saves.completed_step(ckpt) == 4  # nothing moved


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
    assert prepared.resume == 2 == saves.completed_step(ckpt) and saves.saved_steps(ckpt) == [2]


def test_the_launch_says_what_verl_will_load():
    assert verl_checkpoints.launch_words(True, 4) == "resuming from global_step_4"
    # checkpoints kept, but every save set aside: verl starts from the base model, and the log says so
    assert verl_checkpoints.launch_words(True, 0).startswith("starting from the base model (no save")
    assert verl_checkpoints.launch_words(False, 0) == "starting from the base model"


def hollow(save):
    """What verl's retention leaves of a save: its actor removed, data.pt (and the rest) kept."""
    import shutil

    shutil.rmtree(save / "actor")


@pytest.mark.parametrize("marker", ["", "4\x00", "x"])
def test_an_empty_or_unreadable_marker_deletes_no_save(tmp_path, caplog, marker):
    """verl truncates its marker and then writes it: a node crash can leave it empty. Before, every global_step_* was
    then taken for a save cut short and removed (c27f923), and verl crashed on int('')."""
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    assert launch_fake(ckpt, save_freq=2, stop_once_saved=6) != 0  # saves 2, 4, 6 (6 unlogged)
    (ckpt / saves.MARKER).write_text(marker)
    with caplog.at_level(logging.WARNING):
        prepared = verl_checkpoints.prepare_launch(ckpt, keep=2)
    assert "now names global_step_6, the newest whole save; nothing was deleted" in caplog.text
    assert prepared.removed == [] and prepared.pruned == []
    assert saves.saved_steps(ckpt) == [2, 4] and prepared.resume == 4  # 6 set aside (unlogged), not deleted
    assert (ckpt / "unlogged" / "global_step_6" / "weights").read_text() == "6"
    assert launch_fake(ckpt) == 0
    assert_every_step_once(step_table(ckpt))


def test_a_marker_naming_a_missing_or_hollow_save_is_pointed_at_a_whole_one(tmp_path, caplog):
    """verl silently starts from scratch when its marker names a missing directory, while the log said "resuming"; a
    hollow save (verl's retention took its actor) fails to load on every relaunch."""
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    assert launch_fake(ckpt, save_freq=1, stop_once_saved=3) != 0  # saves 1, 2, 3
    hollow(ckpt / "global_step_3")
    with caplog.at_level(logging.WARNING):
        prepared = verl_checkpoints.prepare_launch(ckpt)
    assert "names global_step_3, which is not whole (hollow or cut short): it now names global_step_2" in caplog.text
    assert prepared.resume == 2 and (ckpt / "global_step_3" / "data.pt").is_file()  # nothing deleted
    (ckpt / saves.MARKER).write_text("9")  # a step with no directory
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert verl_checkpoints.prepare_launch(ckpt).resume == 2
    assert "names global_step_9, which is missing: it now names global_step_2" in caplog.text
    assert launch_fake(ckpt) == 0
    assert_every_step_once(step_table(ckpt))


def test_no_whole_save_moves_the_marker_aside_and_the_log_says_base_model(tmp_path, caplog):
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    assert launch_fake(ckpt, save_freq=2, stop_once_saved=2) != 0
    hollow(ckpt / "global_step_2")
    with caplog.at_level(logging.WARNING):
        prepared = verl_checkpoints.prepare_launch(ckpt)
    assert prepared.resume == 0 and not (ckpt / saves.MARKER).exists()
    assert (ckpt / verl_checkpoints.UNTRUSTED).read_text() == "2" and (ckpt / "global_step_2").is_dir()
    assert "no save is whole: moved to" in caplog.text


def test_a_hollow_save_is_never_resumed_from(tmp_path):
    """Before (c27f923), a set-aside counted global_step_k with only data.pt as a save and pointed the marker at it."""
    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    assert launch_fake(ckpt, save_freq=2, stop_once_saved=4) != 0  # saves 2 and 4; 4 unlogged
    (ckpt / "global_step_3" / "actor").mkdir(parents=True)  # a retention leftover between them: no shards
    (ckpt / "global_step_3" / "data.pt").write_text("3")
    prepared = verl_checkpoints.prepare_launch(ckpt)
    assert prepared.resume == 2 and saves.completed_step(ckpt) == 2
    assert launch_fake(ckpt) == 0
    assert_every_step_once(step_table(ckpt))


def relaunched(ckpt, keep: int) -> list[int]:
    """Four launches each stopped once it has saved one step more (a loss between save and log each time), then one to
    the end; the saves held after each launch."""
    held = []
    for stop in (2, 3, 4, 5):
        assert launch_fake(ckpt, save_freq=1, stop_once_saved=stop, keep=keep) != 0
        held.append(len(saves.saved_steps(ckpt)))
        if stop == 3:
            hollow(ckpt / "global_step_1")  # as verl's retention leaves it
    assert launch_fake(ckpt, save_freq=1, keep=keep) == 0
    assert_every_step_once(step_table(ckpt))
    return held


def test_saves_stay_bounded_across_relaunches(tmp_path):
    """A launch keeps every save it makes (PRIME's recipe keeps all; verl's retention forgets earlier launches'): the
    next launch removes all but the newest ``keep`` whole saves, and the hollow ones verl's retention left. Without it
    (keep 0, as before: c27f923) every launch adds its saves to the last one's."""
    (tmp_path / "pruned").mkdir()
    (tmp_path / "kept").mkdir()
    pruned, kept = relaunched(tmp_path / "pruned", keep=2), relaunched(tmp_path / "kept", keep=0)
    print("saves held after each launch, pruned to 2:", pruned, "never pruned:", kept)
    assert max(pruned) <= 2 + 2  # the 2 it kept, the one it trained again and the one after it
    assert kept == [2, 3, 4, 5] and saves.saved_steps(tmp_path / "kept") == list(range(1, 7))
    assert saves.saved_steps(tmp_path / "pruned") == [3, 4, 5, 6]  # the last launch's: the next prunes them
    assert saves.prune(tmp_path / "pruned", 2) == [tmp_path / "pruned" / f"global_step_{k}" for k in (3, 4)]
    assert saves.peak_saves(2) == 4
