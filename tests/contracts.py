"""The data contracts between stages (the README's Outputs table), as checks the tests share."""

import numpy as np
import pandas as pd
from entropy_rl.core import metric_columns

EVAL_SAMPLE_COLUMNS = ["benchmark", "problem_id", "sample", "response", "extracted", "ground_truth", "correct"]


def check_metrics(frame: pd.DataFrame, benchmarks, steps: int, val_every: int) -> None:
    """results/runs/{run}/metrics.parquet: one row per step, the agreed columns, sane values."""
    for col in metric_columns.BASE_COLUMNS + ["val_acc"] + [f"val_acc/{b}" for b in benchmarks]:
        assert col in frame.columns, col
    assert frame["step"].tolist() == list(range(steps + 1))
    # Eq. 5 over the update batch: undefined only on a step whose groups the filter all dropped.
    measured = frame["kept_prompt_frac"].fillna(1) > 0
    assert (frame.loc[measured, "entropy"] > 0).all() and frame.loc[~measured, "entropy"].isna().all()
    assert np.isnan(frame["entropy_change"].iloc[0])
    assert np.allclose(frame["entropy_change"].iloc[1:], np.diff(frame["entropy"]), equal_nan=True)
    assert frame["reward_mean"].between(0, 1).all() and (frame["response_length"] >= 1).all()
    val_steps = frame.loc[frame["val_acc"].notna(), "step"].tolist()
    assert val_steps == sorted(set(range(0, steps + 1, val_every)) | {steps})
    assert frame["val_acc"].dropna().between(0, 1).all()
    updated = frame["pg_loss"].notna()
    assert (frame.loc[updated, "cov_top0.02"] >= frame.loc[updated, "cov_top20"] - 1e-12).all()
    assert frame.loc[updated, "bandit_cov"].notna().all() and frame.loc[~updated, "bandit_cov"].isna().all()
    assert frame["cov_touched_frac"].dropna().between(0, 1).all()


def check_eval(samples: pd.DataFrame, summary_row: pd.Series, protocol: dict, size: int) -> None:
    """results/eval/{run}/{benchmark}.parquet: one row per sample; the summary's avg@k matches it."""
    assert list(samples.columns) == EVAL_SAMPLE_COLUMNS
    assert len(samples) == size * protocol["n"]
    assert samples.groupby("problem_id").size().eq(protocol["n"]).all()
    assert summary_row["avg_at_n"] == samples["correct"].mean()
    assert summary_row["pass_at_1"] == samples["correct"].mean()
