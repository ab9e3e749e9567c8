"""Tests of the entropy–performance analysis (Eq. 6 fit, early prediction, Figure 2 shares)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from entropy_rl.study import analysis

A, B = 0.3, 0.9


def law_run(n_steps=240, val_every=8, a=A, b=B, noise=0.0, seed=0) -> pd.DataFrame:
    """Metrics table whose validation accuracy follows Eq. 6 exactly (plus optional noise)."""
    rng = np.random.default_rng(seed)
    step = np.arange(n_steps + 1)
    entropy = 0.05 + 0.95 * np.exp(-step / 30)  # accuracy from 0.08 to 0.58
    val = (step % val_every == 0) | (step == n_steps)
    acc = np.where(val, analysis.entropy_law(entropy, a, b) + rng.normal(0, noise, step.size), np.nan)
    return pd.DataFrame(
        {
            "step": step,
            "entropy": entropy,
            "entropy_change": np.r_[np.nan, np.diff(entropy)],
            "reward_mean": 0.5,
            "response_length": 300.0,
            "val_acc/math": acc,
            "val_acc": acc,
        }
    )


def test_entropy_law_values():
    assert analysis.entropy_law(0.0, A, B) == pytest.approx(B - A)
    np.testing.assert_allclose(analysis.entropy_law(np.array([0.0, 1.0]), 1.0, 2.0), [1.0, 2.0 - math.e])


def test_fit_recovers_known_parameters():
    rng = np.random.default_rng(1234)
    H = rng.uniform(0.05, 1.5, 40)
    R = analysis.entropy_law(H, A, B) + rng.normal(0, 0.005, H.size)
    fit = analysis.fit_entropy_law(H, R)
    assert abs(fit["a"] - A) < 0.02
    assert abs(fit["b"] - B) < 0.02
    assert fit["r2"] > 0.95
    assert fit["n"] == 40
    assert fit["ceiling"] == pytest.approx(fit["b"] - fit["a"])
    # residual scale matches the noise, and standard errors are small but positive
    assert 0.002 < fit["rmse"] < 0.01
    assert 0 < fit["a_stderr"] < 0.01 and 0 < fit["b_stderr"] < 0.02


def test_fit_standard_errors_match_ols_covariance():
    rng = np.random.default_rng(7)
    H = rng.uniform(0.1, 1.2, 25)
    R = analysis.entropy_law(H, 0.2, 0.7) + rng.normal(0, 0.01, H.size)
    fit = analysis.fit_entropy_law(H, R)
    (slope, intercept), cov = np.polyfit(np.exp(H), R, 1, cov=True)  # cov scaled by chi2 / (n - 2)
    assert fit["a"] == pytest.approx(-slope)
    assert fit["b"] == pytest.approx(intercept)
    assert fit["a_stderr"] == pytest.approx(math.sqrt(cov[0, 0]))
    assert fit["b_stderr"] == pytest.approx(math.sqrt(cov[1, 1]))


def test_fit_exact_data_is_perfect():
    H = np.linspace(0.1, 1.0, 5)
    fit = analysis.fit_entropy_law(H, analysis.entropy_law(H, A, B))
    assert fit["a"] == pytest.approx(A) and fit["b"] == pytest.approx(B)
    assert fit["r2"] == pytest.approx(1.0) and fit["rmse"] == pytest.approx(0.0, abs=1e-12)


def test_fit_rejects_too_few_or_degenerate_points():
    with pytest.raises(ValueError, match="at least 3"):
        analysis.fit_entropy_law([0.1, 0.5], [0.5, 0.4])
    with pytest.raises(ValueError, match="at least 3"):
        analysis.fit_entropy_law([0.1, 0.5, np.nan], [0.5, 0.4, 0.3])  # NaN pairs are dropped
    with pytest.raises(ValueError, match="zero variance"):
        analysis.fit_entropy_law([0.3, 0.3, 0.3], [0.5, 0.4, 0.3])


def test_validation_points_and_fit_run():
    m = law_run(n_steps=100, val_every=10)
    pts = analysis.validation_points(m)
    assert list(pts.columns) == ["step", "entropy", "R"]
    assert pts["step"].tolist() == list(range(0, 101, 10))
    assert pts["R"].between(0, 1).all()
    fit = analysis.fit_run(m)
    assert fit["n"] == 11 and fit["a"] == pytest.approx(A) and fit["b"] == pytest.approx(B)
    assert analysis.fit_run(m, column="val_acc/math")["a"] == pytest.approx(A)
    # a validated step whose groups the filter all dropped has no Eq. 5 entropy: it is no point of the law
    m.loc[m["step"] == 20, "entropy"] = np.nan
    assert 20 not in analysis.validation_points(m)["step"].tolist() and analysis.fit_run(m)["n"] == 10


def test_early_prediction_uses_only_early_points_and_predicts_later_ones():
    m = law_run(noise=0.004, seed=3)
    out = analysis.early_prediction(m, fit_steps=40)
    pts = pd.DataFrame(out["points"])
    assert list(pts.columns) == ["step", "entropy", "R", "R_pred", "used_for_fit"]
    assert (pts["used_for_fit"] == (pts["step"] <= 40)).all()
    assert out["n_fit"] == out["fit"]["n"] == 6  # steps 0, 8, ..., 40
    assert out["n_fit"] + out["n_pred"] == len(pts)
    assert out["rmse_pct"] < 1.5
    assert out["rmse_pct"] == pytest.approx(100 * out["rmse"])
    assert out["final_error_pct"] == pytest.approx(100 * abs(pts["R_pred"].iloc[-1] - pts["R"].iloc[-1]))

    # Changing accuracy after fit_steps leaves the fit unchanged (only early points are used)...
    late = m["step"] > 40
    m2 = m.copy()
    m2.loc[late, "val_acc"] = m2.loc[late, "val_acc"] - 0.2
    out2 = analysis.early_prediction(m2, fit_steps=40)
    assert out2["fit"]["a"] == pytest.approx(out["fit"]["a"]) and out2["fit"]["b"] == pytest.approx(out["fit"]["b"])
    # ...but shows up as prediction error.
    assert out2["rmse_pct"] > 15


def test_early_prediction_without_later_points():
    out = analysis.early_prediction(law_run(n_steps=40), fit_steps=40)
    assert out["n_pred"] == 0 and math.isnan(out["rmse"])


def hand_run() -> pd.DataFrame:
    """Steps 0..8, validation at even steps; odd-step entropies are junk that must not matter."""
    step = np.arange(9)
    entropy = np.array([1.0, 9.9, 0.6, 9.9, 0.4, 9.9, 0.3, 9.9, 0.2])
    acc = np.array([0.2, np.nan, 0.5, np.nan, 0.6, np.nan, 0.65, np.nan, 0.7])
    return pd.DataFrame({"step": step, "entropy": entropy, "val_acc": acc})


def test_cumulative_shares_hand_example():
    shares = analysis.cumulative_shares(hand_run())
    assert list(shares.columns) == ["step", "step_frac", "entropy_share", "perf_share"]
    assert shares["step"].tolist() == [0, 2, 4, 6, 8]
    np.testing.assert_allclose(shares["step_frac"], [0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(shares["entropy_share"], [0, 0.5, 0.75, 0.875, 1.0])
    np.testing.assert_allclose(shares["perf_share"], [0, 0.6, 0.8, 0.9, 1.0])
    assert analysis.share_at(shares, 1 / 12) == pytest.approx((0.5, 0.6))  # first validation step >= 1/12 is step 2
    assert analysis.share_at(shares, 0.25) == pytest.approx((0.5, 0.6))  # exact hit
    assert analysis.share_at(shares, 1 / 3) == pytest.approx((0.75, 0.8))
    assert analysis.share_at(shares, 0.0) == pytest.approx((0.0, 0.0))
    with pytest.raises(ValueError):
        analysis.share_at(shares.iloc[:-1], 0.9)


def test_cumulative_shares_monotone_run_start_at_zero_end_at_one():
    shares = analysis.cumulative_shares(law_run())
    assert shares["entropy_share"].iloc[0] == 0 and shares["perf_share"].iloc[0] == 0
    assert shares["entropy_share"].iloc[-1] == pytest.approx(1) and shares["perf_share"].iloc[-1] == pytest.approx(1)
    assert shares["step_frac"].iloc[-1] == 1
    assert (np.diff(shares["entropy_share"]) > 0).all() and (np.diff(shares["perf_share"]) > 0).all()
    # With a 1/30-step entropy decay, most of both is spent in the first third
    h, r = analysis.share_at(shares, 1 / 3)
    assert h > 0.9 and r > 0.9


def test_cumulative_shares_flat_accuracy_leaves_entropy_share():
    m = hand_run()
    m["val_acc"] = np.where(m["val_acc"].notna(), 0.5, np.nan)
    shares = analysis.cumulative_shares(m)
    assert shares["perf_share"].isna().all()
    assert shares["entropy_share"].iloc[-1] == pytest.approx(1)
    m["entropy"] = 0.7
    with pytest.raises(ValueError, match="neither entropy nor"):
        analysis.cumulative_shares(m)


def test_fits_table():
    fits = {"grpo": analysis.fit_run(law_run()), "kl_cov": analysis.fit_run(law_run(a=0.2, b=0.8))}
    table = analysis.fits_table(fits)
    assert table.index.name == "run" and table.index.tolist() == ["grpo", "kl_cov"]
    assert table.columns.tolist() == analysis.FIT_COLUMNS
    assert table.loc["kl_cov", "a"] == pytest.approx(0.2)
    assert analysis.fits_table({}).empty


def test_pooled_shares_weigh_runs_by_their_change():
    moving = hand_run()
    flat = hand_run()
    flat["val_acc"] = np.where(flat["val_acc"].notna(), 0.5, np.nan)  # gains nothing: no share of its own
    pooled = analysis.pooled_shares({"moving": moving, "flat": flat})
    alone = analysis.cumulative_shares(moving)
    # The flat run adds nothing to the performance pool, so the pooled share is the moving run's.
    assert np.allclose(pooled["perf_share"], alone["perf_share"])
    # Both runs lose the same entropy, so pooled entropy shares equal each run's.
    assert np.allclose(pooled["entropy_share"], alone["entropy_share"])
    assert pooled["entropy_share"].iloc[-1] == pytest.approx(1) and pooled["perf_share"].iloc[0] == 0


# ---- predictability across runs, coefficients, covariance -------------------------------------


def test_shared_coefficients_test_tells_one_law_from_two():
    same = {f"r{i}": law_run(noise=0.01, seed=i) for i in range(3)}
    result = analysis.shared_coefficients_test(same)
    assert result["p_value"] > 0.05
    assert result["max_curve_gap_pct"] < 2.0
    different = {"r0": law_run(noise=0.01, seed=0), "r1": law_run(a=0.2, b=0.6, noise=0.01, seed=1)}
    result = analysis.shared_coefficients_test(different)
    assert result["p_value"] < 1e-6
    assert result["max_curve_gap_pct"] > 5.0


def test_shared_coefficients_test_needs_two_runs():
    with pytest.raises(ValueError, match="at least 2 runs"):
        analysis.shared_coefficients_test({"only": law_run()})


def test_coefficients_anova_judges_runs_against_their_seeds():
    def fit(**law):
        return analysis.fit_run(law_run(noise=0.01, **law))

    same = {f"r{i}": [fit(seed=10 * i + k) for k in range(3)] for i in range(3)}
    result = analysis.coefficients_anova(same)
    assert result["p_value"] > 0.05
    assert result["p_value"] == min(1.0, 2 * min(result["a"]["p_value"], result["b"]["p_value"]))
    different = {"r0": [fit(seed=k) for k in range(3)], "r1": [fit(a=0.2, b=0.6, seed=5 + k) for k in range(3)]}
    result = analysis.coefficients_anova(different)
    assert result["p_value"] < 1e-3 and result["b"]["mean"]["r1"] == pytest.approx(0.6, abs=0.05)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        analysis.coefficients_anova({"r0": same["r0"], "r1": same["r1"][:1]})


def test_log_linear_fit_recovers_slope():
    x = np.array([1e6, 1e7, 1e8, 1e9])
    fit = analysis.log_linear_fit(x, 0.1 * np.log10(x) + 0.2)
    assert fit["slope"] == pytest.approx(0.1)
    assert fit["intercept"] == pytest.approx(0.2)
    assert fit["r2"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 3"):
        analysis.log_linear_fit(x[:2], x[:2])


def covariance_run(sign=1.0, seed=0, n=80):
    """Entropy falls by an amount proportional to the bandit covariance (Theorem 1), plus noise; the
    token covariance (cov_all) is a different, unrelated series; hard prompts carry less covariance."""
    rng = np.random.default_rng(seed)
    cov = sign * (0.05 + 0.05 * np.exp(-np.arange(n) / 15)) + rng.normal(0, 0.005, n)
    entropy = 1.0 - np.r_[0.0, np.cumsum(0.5 * cov[:-1])]
    frame = pd.DataFrame(
        {
            "step": np.arange(n),
            "entropy": entropy,
            "bandit_cov": cov,
            "cov_all": rng.normal(0.001, 0.001, n),
            "bandit_cov_acc0.125": 0.3 * cov + rng.normal(0, 0.002, n),
            "bandit_cov_acc0.5": 0.8 * cov,
            "bandit_cov_acc0.875": cov + rng.normal(0, 0.002, n),
        }
    )
    frame.loc[frame.index % 7 == 3, "bandit_cov_acc0.125"] = np.nan  # steps without a prompt of accuracy 1/8
    return frame


def test_the_measures_write_the_contract_columns_the_study_reads():
    import torch
    from entropy_rl.core import metric_columns, metrics  # the producer (loads torch; the analysis does not)

    g = torch.Generator().manual_seed(0)
    log_prob, adv = torch.randn(16, 5, generator=g), torch.randn(16, 5, generator=g)
    mask, groups = torch.ones(16, 5), torch.arange(16) // 8
    rewards = (torch.arange(16) % 8 < torch.tensor([1, 4]).repeat_interleave(8)).float()
    produced = {
        **metrics.covariance_summary(log_prob, adv, mask),
        **metrics.bandit_covariance(log_prob, adv, mask, groups, rewards),
    }
    assert set(produced) == {
        metric_columns.TOKEN_COV,
        *metric_columns.COV_TOP,
        metric_columns.BANDIT_COV,
        *metric_columns.BANDIT_ACC,
    }
    assert set(produced) <= set(metric_columns.BASE_COLUMNS)


def test_covariance_dynamics_tracks_entropy_change():
    """Row t's bandit covariance is paired with H[t] - H[t+1]: here exactly proportional, so r = 1."""
    run = covariance_run()
    d = analysis.covariance_dynamics(run)
    assert d["column"] == "bandit_cov" and d["n_steps"] == 79
    assert d["pearson_r"] == pytest.approx(1.0) and d["p_value"] < 1e-6
    assert d["positive_share"] == 1.0
    lagged = run.assign(bandit_cov=run["bandit_cov"].shift(1))  # paired with the previous step's change
    assert analysis.covariance_dynamics(lagged)["pearson_r"] < 0.99
    assert analysis.covariance_dynamics(covariance_run(sign=-1.0))["positive_share"] == 0.0
    # the token covariance is another quantity
    assert abs(analysis.covariance_dynamics(run, "cov_all")["pearson_r"]) < 0.5
    with pytest.raises(KeyError, match="bandit_cov"):
        analysis.covariance_dynamics(run.drop(columns="bandit_cov"))


def test_covariance_dynamics_skips_steps_without_covariance():
    run = covariance_run()
    run.loc[[5, 6], "bandit_cov"] = np.nan
    d = analysis.covariance_dynamics(run)
    assert d["n_steps"] == 77 and d["positive_share"] == 1.0
    with pytest.raises(ValueError, match="at least 3 steps with bandit_cov"):
        analysis.covariance_dynamics(run.assign(bandit_cov=np.nan))


def test_covariance_by_difficulty_orders_groups():
    run = covariance_run()
    d = analysis.covariance_by_difficulty(run)
    means = d["mean"]
    assert means["bandit_cov_acc0.125"] < means["bandit_cov_acc0.5"] < means["bandit_cov_acc0.875"]
    assert d["n_paired_steps"] == int(run["bandit_cov_acc0.125"].notna().sum()) < len(run)
    assert d["hard_below_easy_p"] < 1e-6
    flipped = run.rename(
        columns={"bandit_cov_acc0.125": "bandit_cov_acc0.875", "bandit_cov_acc0.875": "bandit_cov_acc0.125"}
    )
    assert analysis.covariance_by_difficulty(flipped)["hard_below_easy_p"] > 0.5
    few = run.assign(**{"bandit_cov_acc0.875": np.where(run["step"] < 4, run["bandit_cov_acc0.875"], np.nan)})
    assert math.isnan(analysis.covariance_by_difficulty(few)["hard_below_easy_p"])


def test_entropy_stability_and_final_value():
    smooth = pd.DataFrame({"step": range(100), "entropy": np.linspace(1, 0.5, 100)})
    rough = smooth.assign(entropy=smooth["entropy"] + np.tile([0.05, -0.05], 50))
    assert analysis.entropy_stability(smooth) < analysis.entropy_stability(rough)
    assert analysis.final_value(smooth, "entropy", last=1) == pytest.approx(0.5)


def test_benchmark_accuracy_is_percent_with_unweighted_mean():
    s = pd.DataFrame({"benchmark": ["x", "y"], "avg_at_n": [0.5, 0.25]})
    table = analysis.benchmark_accuracy({"run": s})
    assert table.loc["run", "x"] == 50.0
    assert table.loc["run", "Avg."] == pytest.approx(37.5)


def test_covariance_distribution_skips_steps_without_covariance():
    m = covariance_run()
    for col in ("cov_top0.02", "cov_top0.2", "cov_top2", "cov_top20", "cov_top50"):
        m[col] = 2 * m["cov_all"]
    # all groups filtered
    m.loc[0, ["cov_all", "cov_top0.02", "cov_top0.2", "cov_top2", "cov_top20", "cov_top50"]] = np.nan
    row = analysis.covariance_distribution(m)
    assert row["cov_all"] == m.loc[1, "cov_all"] and row.notna().all()
    assert row.name == 1  # the step it was read at
    assert list(row.index) == ["cov_top0.02", "cov_top0.2", "cov_top2", "cov_top20", "cov_top50", "cov_all"]
    with pytest.raises(ValueError, match="no step with a measured covariance"):
        analysis.covariance_distribution(m.assign(cov_all=np.nan))


def test_covariance_distribution_reads_training_step_1():
    """Row 0 is the rollout of the base policy (the paper's training step 1), whatever order the rows are in."""
    m = covariance_run().iloc[::-1]
    for col in ("cov_top0.02", "cov_top0.2", "cov_top2", "cov_top20", "cov_top50"):
        m[col] = 3 * m["cov_all"]
    row = analysis.covariance_distribution(m)
    assert row.name == 0 and row["cov_all"] == m.loc[0, "cov_all"]
    assert analysis.covariance_distribution(m, step=5)["cov_all"] == m.loc[5, "cov_all"]
