"""verl's own file logger output becomes the metrics.parquet contract."""

import math

import pytest
from entropy_rl.core import metric_columns
from entropy_rl.paper import verl_metrics
from verl.utils.tracking import FileLogger


def test_verl_file_log_translates_to_contract(tmp_path, monkeypatch):
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(tmp_path / "run.jsonl"))
    logger = FileLogger("entropy-mechanism", "run")  # verl's own writer, so the format is verl's
    logger.log(
        {"val-core/math500/acc/mean@1": 0.40, "val-core/aime24/acc/mean@32": 0.10, "val-aux/math500/acc/std@1": 0.1},
        step=0,
    )
    for k, (h, r) in enumerate([(0.9, 0.30), (0.6, 0.45), (0.5, 0.50), (0.45, 0.52)], start=1):
        logger.log(
            {
                "actor/entropy": h + 1.0,  # verl's token-mean; the paper's Eq. 5 (paper/entropy) takes precedence
                "paper/entropy": h,
                "critic/score/mean": r,
                "response_length/mean": 900.0 + k,
                "actor/pg_loss": -0.01,
                "paper/cov_all": 0.002,
                "paper/cov_top0.02": 5.0 - k,
                "paper/bandit_cov": 0.01 * k,
                "paper/bandit_cov_acc0.5": 0.02,
                # means over micro-batches of the loss plugin's sums and counts
                "actor/cliphigher_cov_sum": -0.06,
                "actor/cliphigher_tokens": 2.0 if k < 4 else 0.0,
                "actor/cov_touched_tokens": 1.0,
                "actor/response_tokens": 4000.0,
            },
            step=k,
        )
        if k % 2 == 0:
            logger.log(
                {"val-core/math500/acc/mean@1": 0.40 + 0.05 * k, "val-core/aime24/acc/mean@32": 0.10 + 0.01 * k}, step=k
            )
    logger.finish()

    table = verl_metrics.to_metrics_table(verl_metrics.read_jsonl(tmp_path / "run.jsonl"), ["math500", "aime24"])
    assert set(metric_columns.BASE_COLUMNS) <= set(table.columns)
    assert table["step"].tolist() == [0, 1, 2, 3, 4]
    # verl's step k logs the rollout of the policy before update k: row k - 1.
    assert table["entropy"].tolist()[:4] == [0.9, 0.6, 0.5, 0.45] and math.isnan(table["entropy"].iloc[4])
    assert table.loc[0, "reward_mean"] == 0.30 and table.loc[0, "cov_top0.02"] == 4.0
    assert (
        table["bandit_cov"].tolist()[:4] == pytest.approx([0.01, 0.02, 0.03, 0.04])
        and table.loc[1, "bandit_cov_acc0.5"] == 0.02
    )
    assert table.loc[0, "cliphigher_cov"] == pytest.approx(-0.03) and math.isnan(table.loc[3, "cliphigher_cov"])
    assert table.loc[0, "cov_touched_frac"] == pytest.approx(2.5e-4)
    assert table["entropy_change"].iloc[1] == pytest.approx(-0.3)
    # Validation at step k scores the policy after update k: row k.
    assert table.loc[table["val_acc"].notna(), "step"].tolist() == [0, 2, 4]
    assert table.loc[2, "val_acc/math500"] == pytest.approx(0.5) and table.loc[2, "val_acc"] == pytest.approx(
        (0.5 + 0.12) / 2
    )
    assert "val-aux" not in "".join(table.columns)


def test_empty_log_is_refused():
    with pytest.raises(ValueError, match="no verl training or validation metrics"):
        verl_metrics.to_metrics_table([{"step": 1, "data": {"timing_s/gen": 3.0}}], ["math500"])


def test_a_measure_logged_as_null_is_missing_not_a_failure(tmp_path, monkeypatch):
    """verl's file logger writes None as null: the bandit covariance of an accuracy no kept group has (found when the
    pilot first ran here, where it failed the translation after training)."""
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(tmp_path / "verl.jsonl"))
    logger = FileLogger("entropy-mechanism", "run")
    logger.log({"paper/entropy": 0.7, "paper/bandit_cov_acc0.5": None, "paper/bandit_cov_acc0.125": 0.25}, step=1)
    logger.finish()
    table = verl_metrics.to_metrics_table(verl_metrics.read_jsonl(tmp_path / "verl.jsonl"), ["math500"])
    assert math.isnan(table.loc[0, "bandit_cov_acc0.5"]) and table.loc[0, "bandit_cov_acc0.125"] == 0.25


def launch(directory, monkeypatch, resume_at: int, last: int, tag: float) -> None:
    """One launch of verl as train_verl sets it up: validation at ``resume_at`` (before training, or
    again on resume), then training steps ``resume_at + 1`` to ``last``; rewards carry ``tag``."""
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(verl_metrics.next_attempt_log(directory)))
    logger = FileLogger("entropy-mechanism", "run")
    logger.log({"val-core/math500/acc/mean@1": 0.1 * resume_at}, step=resume_at)
    for k in range(resume_at + 1, last + 1):
        logger.log({"actor/entropy": 1.0 / k, "critic/score/mean": 0.01 * k + tag}, step=k)
        if k % 4 == 0:
            logger.log({"val-core/math500/acc/mean@1": 0.1 * k}, step=k)
    logger.finish()


def test_a_resumed_run_keeps_the_steps_before_its_checkpoint(tmp_path, monkeypatch):
    # verl's logger truncates its file when it starts: one shared file would lose the first launch.
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(tmp_path / "shared.jsonl"))
    (tmp_path / "shared.jsonl").write_text('{"step": 1, "data": {}}\n')
    FileLogger("entropy-mechanism", "run").finish()
    assert (tmp_path / "shared.jsonl").read_text() == ""

    # The first launch checkpoints after step 4 and is killed after step 6; the requeued one resumes at 4.
    runs = tmp_path / "checkpoints"
    runs.mkdir()
    launch(runs, monkeypatch, resume_at=0, last=6, tag=0.5)
    launch(runs, monkeypatch, resume_at=4, last=8, tag=0.0)
    assert [p.name for p in verl_metrics.attempt_logs(runs)] == ["verl_log.1.jsonl", "verl_log.2.jsonl"]
    table = verl_metrics.to_metrics_table(verl_metrics.read_attempts(runs), ["math500"])
    assert table["step"].tolist() == list(range(9))
    assert table["entropy"].iloc[:8].tolist() == pytest.approx([1.0 / k for k in range(1, 9)])
    # Steps 5 and 6 were trained twice; the table keeps the resumed launch's, whose policy went on.
    assert table["reward_mean"].iloc[:8].tolist() == pytest.approx(
        [0.01 * k + 0.5 for k in range(1, 5)] + [0.01 * k for k in range(5, 9)]
    )
    assert table.loc[table["val_acc"].notna(), "step"].tolist() == [0, 4, 8]


def test_prime_runs_tensorboard_log_translates_to_the_same_table(tmp_path):
    """verl 0.4.1 (PRIME) logs to TensorBoard through torch's SummaryWriter; each launch has its own directory."""
    from torch.utils.tensorboard import SummaryWriter

    first = verl_metrics.next_attempt_log(tmp_path, tensorboard=True)
    writer = SummaryWriter(str(first))  # what verl 0.4.1's _TensorboardAdapter writes with
    writer.add_scalar("val-core/math500/acc/mean@1", 0.40, 0)
    for k, (h, r) in enumerate([(0.9, 0.30), (0.6, 0.45)], start=1):
        writer.add_scalar("actor/entropy", h, k)
        writer.add_scalar("critic/score/mean", r, k)
        writer.add_scalar("response_length/mean", 900.0 + k, k)
    writer.add_scalar("val-core/math500/acc/mean@1", 0.5, 2)
    writer.close()
    second = verl_metrics.next_attempt_log(tmp_path, tensorboard=True)
    assert (first.name, second.name) == ("tensorboard.1", "tensorboard.2")
    records = verl_metrics.read_attempts(tmp_path)
    table = verl_metrics.to_metrics_table(records, ["math500"])
    assert table["step"].tolist() == [0, 1, 2]
    assert table["entropy"].tolist()[:2] == pytest.approx([0.9, 0.6]) and table["val_acc"].iloc[2] == pytest.approx(0.5)
