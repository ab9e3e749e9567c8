"""The mini trainer runs every algorithm and treatment and honours the metrics contract."""

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from contracts import check_metrics
from entropy_rl.core import atomic, formats, random_reward, resume
from entropy_rl.core.evaluation import Protocol
from entropy_rl.core.run import Loss, resolve
from entropy_rl.mini import checkpoints, data, models, trainer
from support import ROOT, a_run

BENCH = {
    "easy": {
        "task": "chain_sum",
        "size": 8,
        "params": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1},
        "protocol": {"temperature": 0.0, "n": 1},
    },
    "hard": {
        "task": "chain_sum",
        "size": 8,
        "params": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1},
        "protocol": {"temperature": 0.6, "n": 2},
    },
}


DATA = {
    "seed": 1,
    "train": {"from": ["easy", "hard"], "size": 64},
    "pretrain": {
        "from": ["easy"],
        "prompts": 200,
        "repeats": 2,
        "worked_share": 0.3,
        "code_worked_share": 0.0,
        "wrong_share": 0.4,
        "wrong_offsets": [-1, 1],
    },
}


@pytest.fixture(scope="module")
def setting(tmp_path_factory, mini_tokenizer):
    out = tmp_path_factory.mktemp("trainer")
    paths = data.prepare_mini_data(dict(DATA, benchmarks=BENCH), out)
    arch = {"hidden_size": 32, "intermediate_size": 64, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1}
    model, tok = models.build_mini_model("qwen2", arch, mini_tokenizer, seed=0)
    corpus = formats.load_verl_parquet(paths["pretrain"])
    models.pretrain(
        model,
        tok,
        formats.prompts_and_answers(corpus)[0],
        list(corpus["response"]),
        steps=150,
        batch_size=32,
        lr=3e-3,
        seed=0,
    )
    model.save_pretrained(out / "base")
    tok.save_pretrained(out / "base")
    val = trainer.validation_sets({b: paths[b] for b in BENCH}, Protocol(temperature=0.6, n=2), 4)
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())["mini"]
    cfg["train"].update(steps=4, prompts_per_step=8, rollout_n=4, ppo_mini_batch_size=4, val_every=2, lr=1e-3)
    cfg.pop("lr_reference_width")  # the runs here train this test's own model, not one of the config's sizes
    return out, paths, val, cfg


@pytest.mark.parametrize(
    "algorithm, treatment",
    [
        ("grpo", "none"),
        ("rloo", "none"),
        ("reinforce_plus_plus", "none"),
        ("prime", "none"),
        ("grpo", "clip_cov"),
        ("grpo", "kl_cov"),
        ("grpo", "entropy_loss"),
        ("grpo", "ref_kl"),
        ("grpo", "clip_higher"),
        ("grpo", "random_reward"),
    ],
)
def test_every_algorithm_and_treatment_trains(setting, algorithm, treatment):
    out, paths, val, cfg = setting
    cfg = dict(cfg, runs={"r": {"model": "m", "algorithm": algorithm, "treatment": treatment}})
    # Unfiltered groups so every step updates even when this tiny model's groups agree.
    run = resolve(cfg, "r").but(filter_groups=False)
    run_dir = out / f"{algorithm}-{treatment}"
    frame = trainer.train(run, out / "base", paths["train"], val, run_dir)
    check_metrics(frame, list(BENCH), steps=4, val_every=2)
    assert frame["pg_loss"].iloc[:-1].notna().all()
    # Section 4.5's token counts come from the loss calls of the treatments they describe.
    touched = frame["cov_touched_frac"].iloc[:-1]
    assert touched.notna().all() if treatment in ("clip_cov", "kl_cov") else touched.isna().all()
    if treatment != "clip_higher":
        assert frame["cliphigher_cov"].isna().all()
    before, after = models.load(out / "base")[0], models.load(run_dir / "final")[0]
    moved = sum(float((p - q).detach().abs().sum()) for p, q in zip(before.parameters(), after.parameters()))
    assert moved > 0


def test_same_seed_same_run(setting):
    out, paths, val, cfg = setting
    cfg = dict(cfg, runs={"r": {"model": "m", "algorithm": "grpo", "treatment": "none"}})
    run = resolve(cfg, "r")
    a = trainer.train(run, out / "base", paths["train"], val, out / "seed-a")
    b = trainer.train(run, out / "base", paths["train"], val, out / "seed-b")
    assert a.equals(b)


def test_a_step_whose_groups_are_all_alike_stops_the_run_at_the_released_bound(setting, monkeypatch):
    """Every response wrong: the step draws max_num_gen_batches generation batches, keeps no group, and the run stops
    there, naming itself, the step and why, as the authors' released scripts stop (not a step logged without update)."""
    out, paths, val, cfg = setting
    cfg = dict(cfg, runs={"r": {"model": "m", "algorithm": "grpo", "treatment": "none"}})
    run = resolve(cfg, "r")
    assert run.filter_groups and run.max_num_gen_batches == 10  # config.yaml's mini value: the scripts'
    drawn = []
    monkeypatch.setattr(trainer, "grade", lambda styles, golds, texts: drawn.append(len(golds)) or np.zeros(len(golds)))
    with pytest.raises(RuntimeError, match="^run r, step 0: ") as raised:  # 491acc3 logged every step unupdated
        trainer.train(run, out / "base", paths["train"], val, out / "filtered")
    print(raised.value)
    assert isinstance(raised.value, trainer.GenerationBoundReached)
    assert drawn == [run.prompts_per_step * run.rollout_n] * 10  # ten generation batches of step 0, no more
    message = str(raised.value)
    assert message.startswith("run r, step 0: 10 generation batches (80 prompts, 10 x 8) kept no prompt group")
    assert "all right or all wrong" in message
    assert not (out / "filtered" / "metrics.parquet").exists() and not (out / "filtered" / "final").exists()


def test_entropy_is_measured_on_the_groups_the_filter_keeps(setting, monkeypatch):
    """Eq. 5 over the update batch, as the authors' trainer logs it: only the one mixed group here."""
    out, paths, val, cfg = setting
    cfg = dict(cfg, runs={"r": {"model": "m", "algorithm": "grpo", "treatment": "none"}})
    run = resolve(cfg, "r")
    n = run.rollout_n
    monkeypatch.setattr(
        trainer,
        "grade",
        lambda styles, golds, texts: np.array([float(i < n and i % 2 == 0) for i in range(len(golds))]),
    )
    seen, real = [], trainer.metrics.policy_entropy
    monkeypatch.setattr(trainer.metrics, "policy_entropy", lambda ent, mask: seen.append(len(ent)) or real(ent, mask))
    frame = trainer.train(run, out / "base", paths["train"], val, out / "one-group")
    assert seen == [n] * (run.steps + 1) and frame["entropy"].notna().all()
    assert frame["kept_prompt_frac"].tolist() == [1 / run.prompts_per_step] * (run.steps + 1)


def test_a_step_whose_groups_are_all_dropped_draws_the_next_prompts(setting, monkeypatch):
    """Every first batch of a step all wrong, every second one with a mixed group: each step updates on the second."""
    out, paths, val, cfg = setting
    cfg = dict(cfg, runs={"r": {"model": "m", "algorithm": "grpo", "treatment": "none"}})
    run = resolve(cfg, "r")
    n = run.rollout_n
    drawn = []

    def score(styles, golds, texts):
        drawn.append(len(golds))
        return np.array([float(len(drawn) % 2 == 0 and i < n and i % 2 == 0) for i in range(len(golds))])

    monkeypatch.setattr(trainer, "grade", score)
    frame = trainer.train(run, out / "base", paths["train"], val, out / "redrawn")
    assert (
        len(drawn) == 2 * (run.steps + 1)
        and frame["entropy"].notna().all()
        and frame["pg_loss"].iloc[:-1].notna().all()
    )
    assert frame["gen_batches"].tolist() == [2] * (run.steps + 1) and frame["kept_prompt_frac"].gt(0).all()


class Interrupted(Exception):
    """Stands in for a kill: raised mid-step, after that step's rollout has drawn its random numbers."""


def weights(path):
    return models.load(path)[0].state_dict()


@pytest.mark.parametrize("algorithm, treatment", [("grpo", "kl_cov"), ("prime", "none")])
def test_a_run_interrupted_mid_step_resumes_to_the_same_end(setting, monkeypatch, caplog, algorithm, treatment):
    out, paths, val, cfg = setting
    cfg = dict(cfg, runs={"r": {"model": "m", "algorithm": algorithm, "treatment": treatment}})
    run = resolve(cfg, "r").but(filter_groups=False, save_every=2)
    whole = trainer.train(run, out / "base", paths["train"], val, out / f"whole-{algorithm}")
    assert not (out / f"whole-{algorithm}" / "checkpoints").exists()  # resume state goes once the outputs exist

    run_dir = out / f"resumed-{algorithm}"
    calls, grade = [], trainer.grade

    def grade_then_die(styles, golds, texts):
        calls.append(1)
        if len(calls) == 4:  # step 3: its rollout is sampled, the checkpoint after step 1 is the last
            raise Interrupted
        return grade(styles, golds, texts)

    monkeypatch.setattr(trainer, "grade", grade_then_die)
    with pytest.raises(Interrupted):
        trainer.train(run, out / "base", paths["train"], val, run_dir)
    assert [p.name for p in checkpoints.completed(run_dir / "checkpoints")] == ["step_000002"]
    assert not (run_dir / "metrics.parquet").exists() and not (run_dir / "final").exists()

    monkeypatch.setattr(trainer, "grade", grade)
    with caplog.at_level("INFO", logger="entropy_rl.mini.trainer"):
        resumed = trainer.train(run, out / "base", paths["train"], val, run_dir)
    assert "steps 0-1 done" in caplog.text
    pd.testing.assert_frame_equal(resumed, whole, check_exact=True)
    pd.testing.assert_frame_equal(pd.read_parquet(run_dir / "metrics.parquet"), whole, check_exact=True)
    a, b = weights(out / f"whole-{algorithm}" / "final"), weights(run_dir / "final")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_random_reward_run_never_grades_its_rollouts_and_resumes_to_the_same_draws(setting, monkeypatch):
    """The control (config.yaml treatment random_reward): each step pays the seeded coins of core.random_reward, the
    grader never asked; its validation is still graded; killed mid-step, it resumes to the run it would have been."""
    out, paths, val, cfg = setting
    cfg = dict(cfg, runs={"r": {"model": "m", "algorithm": "grpo", "treatment": "random_reward"}})
    run = resolve(cfg, "r").but(save_every=2)
    assert run.loss == Loss(**cfg["train"]["loss"], reward="random")  # the treatment changes the reward, nothing else
    monkeypatch.setattr(trainer, "grade", lambda *args: pytest.fail("a random-reward run graded its rollouts"))
    paid, draw, die_at = [], random_reward.rollout_rewards, []

    def coins(seed, step, drawn, rows, n):
        paid.append((step, draw(seed, step, drawn, rows, n)))
        if die_at and len(paid) == die_at[0]:  # step 3's rollout drawn; the checkpoint after step 1 the last
            raise Interrupted
        return paid[-1][1]

    monkeypatch.setattr(random_reward, "rollout_rewards", coins)
    whole = trainer.train(run, out / "base", paths["train"], val, out / "coin-whole")
    last = {step: rewards for step, rewards in paid}  # a step's last generation batch is the one it keeps
    assert whole["reward_mean"].tolist() == pytest.approx([float(last[k].mean()) for k in range(run.steps + 1)])
    assert whole["val_acc"].notna().sum() == 3  # validation still graded (trainer.validate: math-verify)
    paid.clear()
    die_at.append(4)
    with pytest.raises(Interrupted):
        trainer.train(run, out / "base", paths["train"], val, out / "coin-resumed")
    die_at.clear()
    resumed = trainer.train(run, out / "base", paths["train"], val, out / "coin-resumed")
    pd.testing.assert_frame_equal(resumed, whole, check_exact=True)


def test_checkpoints_of_other_settings_or_code_are_set_aside_not_resumed(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))  # code is named by module, read from its file
    code, twin = tmp_path / "fp_probe.py", tmp_path / "fp_probe_twin.py"
    code.write_text("x = 1\n")
    twin.write_text("x = 1\n")
    s = a_run(save_every=5)
    fp = resume.fingerprint(s, ["fp_probe"])
    assert resume.fingerprint(s.but(save_every=7), ["fp_probe"]) == fp  # how often it saves changes nothing
    assert resume.fingerprint(s, ["fp_probe_twin"]) == fp  # the same code under another name: a move keeps checkpoints
    twin.write_text("'''A docstring.'''\nx = 1  # a comment\n")
    assert resume.fingerprint(s, ["fp_probe_twin"]) == fp  # as do a comment and a docstring
    d = tmp_path / "checkpoints"
    assert resume.claim(d, fp) is False
    checkpoints.save(d, 5, {"step": 5})
    checkpoints.save(d, 10, {"step": 10})
    assert [p.name for p in checkpoints.completed(d)] == ["step_000010"]  # only the latest is kept
    assert resume.claim(d, fp) is True
    assert checkpoints.latest(d)[1] == {"step": 10}

    code.write_text("x = 2\n")
    assert resume.claim(d, resume.fingerprint(s, ["fp_probe"])) is False
    assert checkpoints.latest(d) is None
    assert checkpoints.latest(tmp_path / "checkpoints.stale-1")[1] == {"step": 10}  # kept, not deleted
    assert resume.claim(d, resume.fingerprint(s.but(lr=2e-3), ["fp_probe"])) is False
    assert (tmp_path / "checkpoints.stale-2" / resume.RECORD).exists()


def test_an_unreadable_checkpoint_names_itself(tmp_path):
    d = tmp_path / "checkpoints"
    checkpoints.save(d, 3, {"step": 3})
    (d / "step_000003" / "state.pt").write_bytes(b"truncated")
    with pytest.raises(
        RuntimeError,
        match=r"step_000003/state.pt: unreadable checkpoint .* delete .*step_000003 to start this run afresh",
    ):
        checkpoints.latest(d)


def test_outputs_appear_whole_or_not_at_all(tmp_path):
    target = tmp_path / "metrics.parquet"
    frame = pd.DataFrame({"step": [0, 1]})
    with pytest.raises(Interrupted), atomic.output(target) as tmp:
        frame.to_parquet(tmp)
        raise Interrupted
    assert list(tmp_path.iterdir()) == []  # neither the target nor the temporary
    atomic.to_parquet(frame, target)
    with pytest.raises(Interrupted), atomic.output(target) as tmp:
        tmp.write_bytes(b"half")
        raise Interrupted
    pd.testing.assert_frame_equal(pd.read_parquet(target), frame)  # the earlier whole file is untouched
    final = tmp_path / "final"
    for version in ("old", "new"):
        with atomic.output(final) as tmp:
            tmp.mkdir()
            (tmp / version).write_text(version)
    assert [p.name for p in final.iterdir()] == ["new"]  # a directory is replaced, never merged
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final", "metrics.parquet"]


def test_a_code_run_grades_its_programs_in_the_sandbox(tmp_path, mini_tokenizer):
    """The code task end to end: a model pre-trained on programs writes them, the sandbox runs them,
    and each step's row counts the programs run and those stopped for a limit."""
    prog = {
        "domain": "code",
        "task": "chain_sum",
        "size": 8,
        "protocol": {"temperature": 0.0, "n": 1},
        "params": {"min_terms": 3, "max_terms": 3, "min_digits": 1, "max_digits": 1},
    }
    corpus_spec = dict(DATA["pretrain"], **{"from": ["prog"], "prompts": 60})
    paths = data.prepare_mini_data(
        {"seed": 1, "benchmarks": {"prog": prog}, "train": {"from": ["prog"], "size": 32}, "pretrain": corpus_spec},
        tmp_path,
    )
    arch = {"hidden_size": 32, "intermediate_size": 64, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1}
    model, tok = models.build_mini_model("qwen2", arch, mini_tokenizer, seed=0)
    corpus = formats.load_verl_parquet(paths["pretrain"])
    models.pretrain(
        model,
        tok,
        formats.prompts_and_answers(corpus)[0],
        list(corpus["response"]),
        steps=120,
        batch_size=32,
        lr=3e-3,
        seed=0,
    )
    model.save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())["mini"]
    cfg.pop("lr_reference_width")
    cfg["train"].update(
        steps=2, prompts_per_step=4, rollout_n=4, ppo_mini_batch_size=4, val_every=2, filter_groups=False
    )
    run = resolve(dict(cfg, runs={"r": {"model": "m", "algorithm": "grpo", "treatment": "none"}}), "r")
    val = trainer.validation_sets({"prog": paths["prog"]}, Protocol(temperature=0.6, n=2), 4)
    frame = trainer.train(run, tmp_path / "base", paths["train"], val, tmp_path / "run")
    assert "val_acc/prog" in frame and frame["sandbox_programs"].notna().all() and frame["sandbox_programs"].sum() > 0
    assert frame["sandbox_limit_kills"].eq(0).all()


def test_a_verl_advantage_estimator_is_added_by_one_registry_entry_and_the_config(setting, monkeypatch):
    """verl's OPO estimator, which no run of config.yaml uses: its registry entry (core.algorithms) and a run that
    names it are all it takes. The config validates, the run trains at mini scale on verl's own estimator, and its
    figures and audit name it by its label."""
    from entropy_rl.core import algorithms
    from entropy_rl.core import config as config_check
    from entropy_rl.paper import reward_launch
    from entropy_rl.pipeline import scope
    from entropy_rl.study import artifacts

    monkeypatch.setattr(algorithms, "ALGORITHMS", dict(algorithms.ALGORITHMS))
    algorithms.register(algorithms.Algorithm("opo", "OPO", "opo"))
    full = yaml.safe_load((ROOT / "config.yaml").read_text())
    full["mini"]["runs"]["qwen2-m-opo"] = {"model": "qwen2-m", "algorithm": "opo", "treatment": "none"}
    config_check.validate(full, artifacts.PAPER)
    assert scope.run_label(scope.resolve({**full, "scale": "mini"}).scale, "qwen2-m-opo") == "qwen2-m OPO"
    full["paper"]["runs"]["qwen2.5-7b-opo"] = {"model": "qwen2.5-7b", "algorithm": "opo", "treatment": "none"}
    config_check.validate(full, artifacts.PAPER)  # and at paper scale, verl's main_ppo runs it by its estimator
    paper = scope.resolve({**full, "scale": "paper"}).scale
    assert "algorithm.adv_estimator=opo" in reward_launch.verl_command(paper, "qwen2.5-7b-opo")
    out, paths, val, cfg = setting
    cfg = dict(cfg, runs={"r": {"model": "m", "algorithm": "opo", "treatment": "none"}})
    run = resolve(cfg, "r").but(filter_groups=False)
    used = []
    real = trainer.algorithms.compute_advantages
    monkeypatch.setattr(trainer.algorithms, "compute_advantages", lambda est, *a: used.append(est) or real(est, *a))
    frame = trainer.train(run, out / "base", paths["train"], val, out / "opo")
    check_metrics(frame, list(BENCH), steps=4, val_every=2)
    assert used == ["opo"] * 4 and frame["pg_loss"].iloc[:-1].notna().all()
    full["mini"]["runs"]["qwen2-m-x"] = {"model": "qwen2-m", "algorithm": "no-such-estimator", "treatment": "none"}
    with pytest.raises(config_check.ConfigError, match="algorithm"):
        config_check.validate(full, artifacts.PAPER)


def test_a_models_starting_pass_rates_are_its_own_whatever_the_process_drew_before(setting):
    """build_mini_model's check samples each benchmark from the model's seed: an instruct model, loaded rather than
    built from a seed, drew from whatever its process's generator held (a warm server's imports, or none)."""
    from entropy_rl.mini import model_job

    out, paths, _val, _cfg = setting
    model, tok = models.load(out / "base")
    files = [str(paths[b]) for b in BENCH]
    protocols = {b: Protocol(**spec["protocol"]) for b, spec in BENCH.items()}
    rates = []
    for drawn_before in (1, 2):
        torch.manual_seed(drawn_before)
        rates.append(model_job.starting_pass_rates(model, tok, files, protocols, 8, seed=0))
    assert rates[0] == rates[1] and set(rates[0]) == set(BENCH)
