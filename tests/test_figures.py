"""Smoke tests of the figures: each writes a real, non-trivial PDF and PNG from synthetic runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from entropy_rl import analysis, figures

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BENCHMARKS = ("math500", "aime24", "amc")


def synthetic_metrics(n_steps=120, val_every=6, h0=1.3, h_end=0.05, tau=12.0, a=0.3, b=0.9, seed=0) -> pd.DataFrame:
    """A metrics table following the contract, entropy decaying and accuracy following Eq. 6 with noise."""
    rng = np.random.default_rng(seed)
    step = np.arange(n_steps + 1)
    entropy = h_end + (h0 - h_end) * np.exp(-step / tau) + rng.normal(0, 0.005, step.size)
    val = (step % val_every == 0) | (step == n_steps)
    frame = {
        "step": step,
        "entropy": entropy,
        "entropy_change": np.r_[np.nan, np.diff(entropy)],
        "reward_mean": analysis.entropy_law(entropy, a, b) + rng.normal(0, 0.02, step.size),
        "response_length": 400 + 2.0 * step,
        "cov_all": 1e-3 * np.exp(-step / tau),
    }
    cov_scales = {"cov_top0.02": 5.0, "cov_top0.2": 2.0, "cov_top2": 0.5, "cov_top20": 0.05, "cov_top50": 0.01}
    for col, scale in cov_scales.items():
        frame[col] = scale * np.exp(-step / tau) + rng.normal(0, 1e-4, step.size)
    accs = []
    for i, name in enumerate(BENCHMARKS):
        acc = np.clip(analysis.entropy_law(entropy, a, b - 0.1 * i) + rng.normal(0, 0.01, step.size), 0, 1)
        frame[f"val_acc/{name}"] = np.where(val, acc, np.nan)
        accs.append(frame[f"val_acc/{name}"])
    frame["val_acc"] = np.mean(accs, axis=0)
    return pd.DataFrame(frame)


@pytest.fixture
def runs() -> dict[str, pd.DataFrame]:
    return {
        "grpo": synthetic_metrics(seed=0),
        "clip_cov": synthetic_metrics(h_end=0.3, tau=40, a=0.25, seed=1),
        "kl_cov": synthetic_metrics(h_end=0.4, tau=60, a=0.22, b=0.92, seed=2),
    }


LABELS = {"grpo": "GRPO", "clip_cov": "Clip-Cov", "kl_cov": "KL-Cov"}
CAPTION = "Synthetic runs used to test the figure code; the caption is long enough to wrap onto a second line of text."


def assert_written(stem):
    pdf, png = stem.parent / f"{stem.name}.pdf", stem.parent / f"{stem.name}.png"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    data = png.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000


def test_synthetic_metrics_follow_contract():
    m = synthetic_metrics()
    assert m["step"].tolist() == list(range(121))
    assert np.isnan(m["entropy_change"].iloc[0])
    val = m["val_acc"].notna()
    assert val.iloc[0] and val.iloc[-1] and val.sum() == 21
    assert m.loc[val, "val_acc"].between(0, 1).all()


def test_fig02(tmp_path, runs):
    stem = tmp_path / "fig02_cumulative_shares"
    assert figures.fig02_cumulative_shares(runs, stem, CAPTION) == (stem.with_suffix(".pdf"), stem.with_suffix(".png"))
    assert_written(stem)


def test_fig02_single_run_without_caption(tmp_path, runs):
    stem = tmp_path / "sub" / "fig02"  # parent directory is created
    figures.fig02_cumulative_shares({"grpo": runs["grpo"]}, stem, "")
    assert_written(stem)


def test_fig03(tmp_path, runs):
    stem = tmp_path / "fig03_fitted_curves"
    figures.fig03_fitted_curves(runs, LABELS, stem, CAPTION)
    assert_written(stem)


def test_fig03_many_runs_and_unfittable_run(tmp_path, runs):
    many = {f"run{i}": synthetic_metrics(seed=i, a=0.2 + 0.02 * i) for i in range(5)}  # two rows of panels
    many["short"] = synthetic_metrics(n_steps=6, val_every=6)  # 2 validation points: no fit
    stem = tmp_path / "fig03_many"
    figures.fig03_fitted_curves(many, {}, stem, CAPTION)
    assert_written(stem)


def test_fig12(tmp_path, runs):
    stem = tmp_path / "fig12_entropy_accuracy"
    figures.fig12_entropy_accuracy(runs, LABELS, stem, CAPTION)
    assert_written(stem)


def test_save_closes_figure(tmp_path):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    figures.save(fig, tmp_path / "x")
    assert not plt.fignum_exists(fig.number)
    assert (tmp_path / "x.pdf").exists() and (tmp_path / "x.png").exists()
