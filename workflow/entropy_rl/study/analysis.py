"""Entropy–performance analysis of training runs (the paper's Section 3).

The paper's central empirical claim is that validation performance is a
function of policy entropy alone, R = −a·exp(H) + b (Eq. 6), so that entropy
is a resource spent for performance and the ceiling is reached at H = 0
(R = b − a). Everything here reads the per-run metrics table
(``results/runs/{run}/metrics.parquet``, one row per step) and works in the
accuracy units of that table (fractions in [0, 1]) unless a name ends in
``_pct``.

The model is linear in a and b, so the fit is ordinary least squares of R on
exp(H) in closed form: no starting values, no iterative optimiser that could
stop early, and exact standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import scipy.stats

from ..core import metric_columns

FIT_COLUMNS = ["a", "b", "a_stderr", "b_stderr", "r2", "rmse", "n", "ceiling"]


def entropy_law(H, a: float, b: float):
    """The paper's Eq. 6, R = −a·exp(H) + b: performance as a function of entropy alone."""
    return -a * np.exp(H) + b


def validation_points(metrics: pd.DataFrame, column: str = "val_acc") -> pd.DataFrame:
    """Steps where ``column`` was measured, because only those carry an observed R, and entropy too
    (Eq. 5 is over the update batch: undefined on a mini step whose groups the filter all dropped)."""
    if column not in metrics.columns:
        raise KeyError(f"metrics table has no column {column!r}")
    rows = metrics.loc[metrics[column].notna() & metrics["entropy"].notna(), ["step", "entropy", column]]
    rows = rows.rename(columns={column: "R"}).sort_values("step")
    return rows.reset_index(drop=True).astype({"step": int, "entropy": float, "R": float})


def fit_entropy_law(H, R) -> dict:
    """Least-squares fit of Eq. 6 with scipy's linregress: exact, since the model is linear in a and b.

    Regressing R on x = exp(H) gives slope −a and intercept b. Pairs with a
    non-finite value are ignored (``n`` counts the pairs used). ``ceiling`` is
    the predicted performance at zero entropy, b − a. ``rmse`` is the in-sample
    root-mean-square residual.
    """
    H = np.asarray(H, dtype=float).ravel()
    R = np.asarray(R, dtype=float).ravel()
    if H.shape != R.shape:
        raise ValueError(f"H and R differ in length ({H.size} vs {R.size})")
    keep = np.isfinite(H) & np.isfinite(R)
    H, R = H[keep], R[keep]
    n = int(H.size)
    if n < 3:
        raise ValueError(f"fitting R = -a*exp(H) + b needs at least 3 points with finite H and R, got {n}")
    x = np.exp(H)
    if np.ptp(x) <= 1e-12 * max(1.0, float(np.abs(x).max())):
        raise ValueError("exp(H) has (numerically) zero variance: entropy is constant, so a and b are not identifiable")
    reg = scipy.stats.linregress(x, R)
    resid = R - (reg.slope * x + reg.intercept)
    ssr = float(np.sum(resid**2))
    a, b = -float(reg.slope), float(reg.intercept)
    return {
        "a": a,
        "b": b,
        "a_stderr": float(reg.stderr),
        "b_stderr": float(reg.intercept_stderr),
        "r2": float(reg.rvalue**2),
        "rmse": math.sqrt(ssr / n),
        "n": n,
        "ceiling": b - a,
    }


def fit_run(metrics: pd.DataFrame, column: str = "val_acc") -> dict:
    """Eq. 6 fitted on every validation point of one run."""
    pts = validation_points(metrics, column)
    return fit_entropy_law(pts["entropy"], pts["R"])


def early_prediction(metrics: pd.DataFrame, fit_steps: int, column: str = "val_acc") -> dict:
    """Fit on validation points with step <= ``fit_steps`` and predict the rest from entropy.

    This is the paper's test of predictability: if R depends on H only, the
    early part of training already fixes the curve. Errors are reported both
    as fractions and in accuracy points (``*_pct``, ×100) as in the paper.
    ``rmse`` is NaN when no validation point lies after ``fit_steps``;
    ``final_error`` is always taken at the last validation point.
    """
    pts = validation_points(metrics, column)
    used = (pts["step"] <= fit_steps).to_numpy()
    fit = fit_entropy_law(pts.loc[used, "entropy"], pts.loc[used, "R"])
    pts["R_pred"] = entropy_law(pts["entropy"].to_numpy(), fit["a"], fit["b"])
    pts["used_for_fit"] = used
    err = (pts["R_pred"] - pts["R"]).to_numpy()
    held_out = err[~used]
    rmse = float(np.sqrt(np.mean(held_out**2))) if held_out.size else math.nan
    final_error = float(abs(err[-1]))
    return {
        "fit": fit,
        "fit_steps": int(fit_steps),
        "n_fit": int(used.sum()),
        "n_pred": int((~used).sum()),
        "rmse": rmse,
        "rmse_pct": 100.0 * rmse,
        "final_error": final_error,
        "final_error_pct": 100.0 * final_error,
        "points": pts[["step", "entropy", "R", "R_pred", "used_for_fit"]].to_dict("records"),
    }


def cumulative_shares(metrics: pd.DataFrame, column: str = "val_acc") -> pd.DataFrame:
    """Share of the run's total entropy drop and performance gain reached by each validation step (Figure 2).

    Both shares are taken at validation steps only, so no accuracy is
    interpolated: entropy_share = (H0 − H_t)/(H0 − H_end) and perf_share =
    (R_t − R0)/(R_end − R0), with 0 and end the first and last validation
    steps. ``step_frac`` is step / last step of the table.
    """
    pts = validation_points(metrics, column)
    if len(pts) < 2:
        raise ValueError(f"need at least 2 validation points for cumulative shares, got {len(pts)}")
    last_step = int(metrics["step"].max())
    if last_step <= 0:
        raise ValueError("the metrics table must span more than one step")
    H, R = pts["entropy"].to_numpy(), pts["R"].to_numpy()
    dH, dR = H[0] - H[-1], R[-1] - R[0]
    # A quantity that did not move has no share to distribute: NaN, not an error,
    # so the other share of the run can still be shown.
    h_ok, r_ok = bool(np.isfinite(dH) and dH != 0), bool(np.isfinite(dR) and dR != 0)
    if not (h_ok or r_ok):
        raise ValueError(f"neither entropy nor {column} changes between the first and last validation step")
    return pd.DataFrame(
        {
            "step": pts["step"],
            "step_frac": pts["step"] / last_step,
            "entropy_share": (H[0] - H) / dH if h_ok else np.nan,
            "perf_share": (R - R[0]) / dR if r_ok else np.nan,
        }
    )


def pooled_shares(metrics_by_run: dict[str, pd.DataFrame], column: str = "val_acc") -> pd.DataFrame:
    """Cumulative shares pooled over runs: Σ_runs change so far / Σ_runs total change.

    Averaging each run's own share is unstable when a run barely moves (its
    denominator is near zero); pooling weighs each run by how much it changed,
    which is what "73% of the entropy consumption occurred in the first 200
    steps" over many models means. Each run's changes are interpolated onto the
    union of the runs' validation fractions.
    """
    return pool_changes([run_changes(metrics, column, run) for run, metrics in metrics_by_run.items()])


def run_changes(
    metrics: pd.DataFrame, column: str = "val_acc", run: str = ""
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One run's part of ``pooled_shares``: its validation steps as fractions of training, and the
    entropy drop and ``column`` gain from its first validation step to each."""
    pts = validation_points(metrics, column)
    if len(pts) < 2:
        raise ValueError(f"run {run}: need at least 2 validation points, got {len(pts)}")
    frac = pts["step"].to_numpy() / int(metrics["step"].max())
    H, R = pts["entropy"].to_numpy(), pts["R"].to_numpy()
    return frac, H[0] - H, R - R[0]


def pool_changes(changes: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """``pooled_shares`` of runs' ``run_changes`` (a bootstrap over runs pools them many times)."""
    grid = np.unique(np.concatenate([f for f, _, _ in changes]))
    dH = sum(np.interp(grid, f, h) for f, h, _ in changes)
    dR = sum(np.interp(grid, f, r) for f, _, r in changes)
    return pd.DataFrame({"step_frac": grid, "entropy_share": dH / dH[-1], "perf_share": dR / dR[-1]})


def share_at(shares_df: pd.DataFrame, step_frac: float) -> tuple[float, float]:
    """(entropy_share, perf_share) at the first validation step reaching ``step_frac`` of training.

    Taking the first step at or after the fraction (never interpolating)
    matches how a statement such as "in the first 1/12 of training" can be
    read off the validation schedule.
    """
    reached = shares_df.loc[shares_df["step_frac"] >= step_frac - 1e-9].sort_values("step_frac")
    if reached.empty:
        raise ValueError(f"no validation step at or after step_frac={step_frac}")
    row = reached.iloc[0]
    return float(row["entropy_share"]), float(row["perf_share"])


def fits_table(fits: dict[str, dict]) -> pd.DataFrame:
    """Fits of several runs side by side, one row per run id, for tables and plots."""
    table = pd.DataFrame.from_dict(fits, orient="index")
    if table.empty:
        return pd.DataFrame(columns=FIT_COLUMNS).rename_axis("run")
    first = [c for c in FIT_COLUMNS if c in table.columns]
    table = table[first + [c for c in table.columns if c not in first]]
    return table.rename_axis("run")


# ---- Section 2.4–2.5: predictability across runs -------------------------------------------


def early_prediction_summary(metrics_by_run: dict[str, pd.DataFrame], fit_steps: int) -> pd.DataFrame:
    """Each run's early-fit prediction errors (Figure 5), in accuracy points, one row per run."""
    rows = {}
    for run, metrics in metrics_by_run.items():
        pred = early_prediction(metrics, fit_steps)
        counts = {k: pred[k] for k in ("n_fit", "n_pred", "rmse_pct", "final_error_pct")}
        rows[run] = {**counts, "a": pred["fit"]["a"], "b": pred["fit"]["b"]}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("run")


def shared_coefficients_test(metrics_by_run: dict[str, pd.DataFrame], column: str = "val_acc") -> dict:
    """Do several runs share one (a, b)? An F-test of one pooled fit against a fit per run.

    The paper's "coefficients are algorithm-irrelevant" (Figure 6) is a claim
    that a single curve describes runs of different algorithms. The nested
    linear models are R = −a·exp(H) + b pooled (2 parameters) and one (a, b)
    per run (2k parameters); the F statistic compares their residual sums of
    squares. A large p-value means the data give no evidence that the runs
    need different coefficients. ``max_curve_gap_pct`` is the largest gap
    between any run's own curve and the pooled one over the entropy range all
    runs cover, in accuracy points.
    """
    pts = {run: validation_points(m, column) for run, m in metrics_by_run.items()}
    if len(pts) < 2:
        raise ValueError("comparing coefficients needs at least 2 runs")
    H = np.concatenate([p["entropy"].to_numpy() for p in pts.values()])
    R = np.concatenate([p["R"].to_numpy() for p in pts.values()])
    pooled = fit_entropy_law(H, R)
    own = {run: fit_entropy_law(p["entropy"], p["R"]) for run, p in pts.items()}
    rss_pooled = pooled["rmse"] ** 2 * pooled["n"]
    rss_sep = sum(f["rmse"] ** 2 * f["n"] for f in own.values())
    k, n = len(own), pooled["n"]
    df1, df2 = 2 * (k - 1), n - 2 * k
    if df2 <= 0:
        raise ValueError(f"{n} points cannot test {k} separate fits")
    F = ((rss_pooled - rss_sep) / df1) / (rss_sep / df2) if rss_sep > 0 else math.inf
    lo = max(p["entropy"].min() for p in pts.values())
    hi = min(p["entropy"].max() for p in pts.values())
    grid = np.linspace(lo, hi, 50) if hi > lo else np.array([lo])
    gap = max(
        float(np.max(np.abs(entropy_law(grid, f["a"], f["b"]) - entropy_law(grid, pooled["a"], pooled["b"]))))
        for f in own.values()
    )
    test = {"F": float(F), "df1": df1, "df2": df2, "p_value": float(scipy.stats.f.sf(F, df1, df2))}
    return {**test, "pooled": pooled, "per_run": own, "max_curve_gap_pct": 100.0 * gap}


def coefficients_anova(seed_fits: dict[str, list[dict]]) -> dict:
    """Do several runs share one (a, b), judged against seed-to-seed variation? ``seed_fits`` is run -> the
    fit of each of its seeds (``fit_run``). A one-way ANOVA per coefficient, the runs as groups and their
    seeds as replicates; ``p_value`` is the smaller of the two, doubled (Bonferroni over a and b)."""
    if len(seed_fits) < 2 or min(len(fits) for fits in seed_fits.values()) < 2:
        raise ValueError("an ANOVA over seeds needs at least 2 runs of at least 2 seeds each")
    out = {}
    for c in ("a", "b"):
        test = scipy.stats.f_oneway(*[[f[c] for f in fits] for fits in seed_fits.values()])
        out[c] = {
            "F": float(test.statistic),
            "p_value": float(test.pvalue),
            "mean": {r: float(np.mean([f[c] for f in fits])) for r, fits in seed_fits.items()},
            "sd": {r: float(np.std([f[c] for f in fits], ddof=1)) for r, fits in seed_fits.items()},
        }
    out["p_value"] = min(1.0, 2 * min(out["a"]["p_value"], out["b"]["p_value"]))
    return out


def log_linear_fit(x, y) -> dict:
    """y = slope·log10(x) + intercept by least squares (Figure 7: coefficients against model size)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 3:
        raise ValueError(f"a log-linear trend needs at least 3 sizes, got {x.size}")
    reg = scipy.stats.linregress(np.log10(x), y)
    return {
        "slope": float(reg.slope),
        "intercept": float(reg.intercept),
        "r2": float(reg.rvalue**2),
        "p_value": float(reg.pvalue),
        "n": int(x.size),
    }


# ---- Section 3.3: covariance and entropy dynamics --------------------------------------------

# Figure 8's easiest and hardest prompts (group accuracy 7 and 1 of 8) among the bandit covariance's columns.
HARDEST, EASIEST = "bandit_cov_acc0.125", "bandit_cov_acc0.875"


def _column(metrics: pd.DataFrame, column: str) -> pd.Series:
    if column not in metrics.columns:
        raise KeyError(f"metrics table has no column {column!r}")
    return metrics[column]


def entropy_decrease(metrics: pd.DataFrame) -> pd.Series:
    """−ΔH per step: H(t) − H(t+1), the drop that step's update causes (NaN at the last step)."""
    m = metrics.sort_values("step")
    return m["entropy"] - m["entropy"].shift(-1)


def covariance_dynamics(metrics: pd.DataFrame, column: str = metric_columns.BANDIT_COV) -> dict:
    """How a covariance tracks the entropy change (Figure 8, left) and its sign.

    Theorem 1 says H(t+1) − H(t) ≈ −η·Cov(t), so −ΔH and the covariance
    should rise and fall together. The paper's Figure 8 draws the bandit
    covariance (Eq. 8–9, ``bandit_cov``, the default); ``column="cov_all"``
    gives the same statistics for Table 1's token covariance (Eq. 10).
    ``pearson_r`` (and its two-sided p-value) is their correlation over steps,
    pairing row t's covariance with −(H[t+1] − H[t]): the change the update
    of step t's batch causes. ``positive_share`` is the share of steps with a
    positive covariance; steps without one (every group filtered) are left out.
    """
    m = metrics.sort_values("step")
    cov = _column(m, column)
    both = pd.DataFrame({"cov": cov, "neg_dH": entropy_decrease(m)}).dropna()
    if len(both) < 3:
        raise ValueError(f"need at least 3 steps with {column} and an entropy change, got {len(both)}")
    r, p = scipy.stats.pearsonr(both["cov"], both["neg_dH"])
    cov = cov.dropna()
    return {
        "column": column,
        "pearson_r": float(r),
        "p_value": float(p),
        "n_steps": len(both),
        "positive_share": float((cov > 0).mean()),
        "mean_cov": float(cov.mean()),
    }


def covariance_by_difficulty(metrics: pd.DataFrame) -> dict:
    """Mean bandit covariance (Eq. 8–9) per accuracy group over training (Figure 8, right).

    The groups are the prompts of a step whose group accuracy is 1/8 (hardest),
    4/8 and 7/8 (easiest), as in the paper's legend; a step without such a
    prompt has NaN there. ``hard_below_easy_p`` is a one-sided Wilcoxon
    signed-rank test over the steps where both the 1/8 and the 7/8 groups
    occur: small means hard prompts carry less covariance than easy ones. It
    is NaN below 5 such steps, or when the two groups never differ.
    """
    means = {g: float(_column(metrics, g).mean()) for g in metric_columns.BANDIT_ACC}
    paired = metrics[[HARDEST, EASIEST]].dropna()
    p = math.nan
    if len(paired) >= 5 and (paired[HARDEST] != paired[EASIEST]).any():
        p = float(scipy.stats.wilcoxon(paired[HARDEST], paired[EASIEST], alternative="less").pvalue)
    return {"mean": means, "n_paired_steps": len(paired), "hard_below_easy_p": p}


def covariance_distribution(metrics: pd.DataFrame, step: int | None = None) -> pd.Series:
    """Table 1: mean token covariance (Eq. 10) of the top p% of tokens and of all tokens, at one step.

    ``step`` None takes the first step with a measured covariance, as Table 1
    reports training step 1: both the mini trainer and the verl translation
    number the rollout of the base policy, before any update, row 0 (a step
    whose groups were all filtered out has no covariance and is skipped). The
    Series is named after the step it was read at.
    """
    m = metrics.sort_values("step")
    m = m.loc[_column(m, metric_columns.TOKEN_COV).notna()] if step is None else m.loc[m["step"] == step]
    if m.empty:
        raise ValueError(f"no step with a measured covariance{'' if step is None else f' at step {step}'}")
    row = m.iloc[0]
    return row[[*metric_columns.COV_TOP, metric_columns.TOKEN_COV]].astype(float).rename(int(row["step"]))


# ---- Section 4: entropy treatments -----------------------------------------------------------


def final_value(metrics: pd.DataFrame, column: str, last: int = 3) -> float:
    """Mean of a column over its last ``last`` measured points: the end of a run, less noisy than one step."""
    values = metrics.sort_values("step")[column].dropna()
    if values.empty:
        raise ValueError(f"column {column!r} has no values")
    return float(values.tail(last).mean())


def entropy_stability(metrics: pd.DataFrame) -> float:
    """Roughness of the entropy curve over the second half of training: the standard deviation
    of step-to-step changes. Lower is stabler (Section 4.4 compares KL-Cov with Clip-Cov)."""
    m = metrics.sort_values("step")
    late = m.loc[m["step"] >= m["step"].max() / 2, "entropy"]
    return float(late.diff().dropna().std())


def benchmark_accuracy(summaries: dict[str, pd.DataFrame], benchmarks: list[str] | None = None) -> pd.DataFrame:
    """Table 2: accuracy (%) per run and benchmark (avg@n: greedy or the mean over samples) and their mean."""
    table = pd.DataFrame({run: s.set_index("benchmark")["avg_at_n"] for run, s in summaries.items()}).T * 100.0
    if benchmarks is not None:
        table = table[list(benchmarks)]
    table["Avg."] = table.mean(axis=1)
    return table.rename_axis("run")
