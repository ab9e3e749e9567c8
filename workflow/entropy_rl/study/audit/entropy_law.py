"""Measurements of Section 2: how early entropy and accuracy move, and the law R = -a exp(H) + b
(its fit, early prediction, and how its coefficients depend on the algorithm, data and model size)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import scipy.stats

from .. import analysis
from .data import NotComparable, Study
from .registry import Measured, measurement
from .relations import Effect
from .stats import bootstrap


@measurement
def cumulative_share(study: Study, artifact: str, quantity: str, at: float) -> Measured:
    """Pooled share (%) of the entropy drop or accuracy gain reached at a fraction of training, with a
    bootstrap interval over runs (the paper pools its runs the same way)."""
    runs = study.runs(artifact)
    column = {"entropy": "entropy_share", "performance": "perf_share"}[quantity]
    changes = {r: analysis.run_changes(study.metrics(r), run=r) for r in runs}  # once, not per resample

    def stat(picked):
        shares = analysis.pool_changes([changes[r] for r in picked])
        return 100 * analysis.share_at(shares, at)[column == "perf_share"]

    value = stat(runs)
    return Measured(value, f"analysis.pooled_shares over {len(runs)} runs of {artifact}, first validation step at or after {at:.3g} of training",
                    interval=bootstrap(stat, runs))  # fmt: skip


@measurement
def front_loaded(study: Study, artifact: str, at: float, share: float) -> Measured:
    """Both pooled shares at fraction ``at`` of training reach ``share``."""
    runs = study.runs(artifact)
    pooled = analysis.pooled_shares({r: study.metrics(r) for r in runs})
    h, r = analysis.share_at(pooled, at)
    return Measured(f"entropy {100 * h:.0f}%, accuracy {100 * r:.0f}%", f"pooled shares over {len(runs)} runs of {artifact} at {at:.3g} of training",
                    holds=bool(h >= share and r >= share), effects={"entropy share - threshold": h - share, "accuracy share - threshold": r - share})  # fmt: skip


def _val_noise(study: Study, metrics: pd.DataFrame) -> np.ndarray:
    """Binomial standard error of each validation point's macro-averaged accuracy."""
    pts = metrics.loc[metrics["val_acc"].notna()].sort_values("step")
    var = np.zeros(len(pts))
    benches = [b for b in study.val_samples if f"val_acc/{b}" in pts]
    for b in benches:
        p = pts[f"val_acc/{b}"].to_numpy()
        var += p * (1 - p) / study.val_samples[b]
    return np.sqrt(var) / len(benches)


@measurement(pools_seeds=True, relation="not_above")
def law_fits_within_noise(study: Study, artifact: str) -> Measured:
    """Every run's residuals from R = -a exp(H) + b are as small as validation sampling noise allows, up to the
    claim's margin: the effect per run is the residuals' variance over the binomial noise's, minus 1 (chi-square
    over its degrees of freedom, n − 2 per fit), whose standard error is √(2 / dof) of the ratio (the normal
    approximation to a chi-square); a law that fits exactly leaves 0, a misfit as large as the noise 1. A run
    with several seeds sums its seeds' chi-squares and degrees of freedom (each seed has its own fit)."""
    runs = study.runs(artifact)
    effects, parts, r2 = {}, [], []
    for run in runs:
        chi2, dof = 0.0, 0
        for seed_run in study.seeds(run):
            m = study.metrics(seed_run)
            pts = analysis.validation_points(m)
            fit = analysis.fit_entropy_law(pts["entropy"], pts["R"])
            resid = pts["R"] - analysis.entropy_law(pts["entropy"], fit["a"], fit["b"])
            se = np.maximum(_val_noise(study, m), 1e-6)
            chi2 += float(np.sum((resid.to_numpy() / se) ** 2))
            dof += len(pts) - 2
            r2.append(fit["r2"])
        ratio = chi2 / dof
        effects[f"{run}: misfit over noise"] = Effect(ratio - 1, ratio * math.sqrt(2 / dof), seeds=study.replicates)
        parts.append(f"{run} {ratio:.2f} (chi-square {chi2:.1f} on {dof}, p {scipy.stats.chi2.sf(chi2, dof):.3g})")
    seeds = study.replicates
    return Measured(f"residual variance over noise: {'; '.join(parts)}; R² {min(r2):.2f}–{max(r2):.2f}",
                    f"chi-square of each fit's residuals against binomial validation noise, over its degrees of freedom, {len(runs)} runs of {artifact}"
                    + (f", each summed over its {seeds} seeds" if seeds > 1 else ""),
                    holds=all(e.estimate <= 0 for e in effects.values()), effects=effects)  # fmt: skip


def _train_data(study: Study, run: str) -> str:
    return study.specs[run].get("train_data", "train")


def _select(study: Study, artifact: str, task: str | None) -> list[str]:
    runs = study.runs(artifact)
    if task is None:
        return runs
    picked = [r for r in runs if (_train_data(study, r) == "code") == (task == "code")]
    if not picked:
        raise NotComparable(f"{artifact} has no {task} runs at this scale")
    return picked


@measurement
def early_prediction_error(study: Study, artifact: str, quantity: str, task: str | None = None) -> Measured:
    """Mean over runs of the early-fit prediction RMSE or final-point error (accuracy points), with a
    95% t-interval over runs."""
    runs = _select(study, artifact, task)
    table = analysis.early_prediction_summary({r: study.metrics(r) for r in runs}, study.fit_steps)
    values = table[{"rmse": "rmse_pct", "final": "final_error_pct"}[quantity]].dropna().to_numpy()
    mean = float(values.mean())
    half = (
        float(scipy.stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values)))
        if len(values) > 1
        else math.inf
    )
    return Measured(mean, f"analysis.early_prediction fitted on steps <= {study.fit_steps}, mean over {len(values)} runs of {artifact}",
                    interval=(mean - half, mean + half))  # fmt: skip


def _difference(a: list[float], b: list[float]) -> Effect:
    """The difference of two runs' mean coefficient over their seeds, Welch's standard error and degrees of freedom
    (its error shrinks as 1/√seeds: relations.seeds_needed scales it so)."""
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if va + vb > 0 else math.inf
    return Effect(float(np.mean(a) - np.mean(b)), se, df, min(len(a), len(b)))


@measurement(pools_seeds=True, relation=lambda spec: {"shared": "within", "different": "differs"}[spec.get("expect", "shared")])
def shared_coefficients(study: Study, artifact: str, expect: str = "shared") -> Measured:
    """Do the runs share one (a, b)? Each run's a and b against the artifact's first run's: ``expect`` "shared"
    claims every difference lies within the claim's margin (equivalence), "different" that one differs from zero
    (its opposite: all within the margin).

    One seed: each difference's standard error from the two fits' (analysis.fit_run), with the pooled F-test
    (analysis.shared_coefficients_test) shown beside it. Several seeds: each seed's run fitted on its own, and a
    difference of the two runs' means over seeds, Welch's standard error, so it counts only beyond seed-to-seed
    variation; the one-way ANOVA per coefficient is shown beside it.
    """
    runs = study.runs(artifact)
    if len(runs) < 2:
        raise NotComparable(f"{artifact} has fewer than 2 runs at this scale")
    fits = {r: [analysis.fit_run(study.metrics(s)) for s in study.seeds(r)] for r in runs}
    ref, effects = runs[0], {}
    for r in runs[1:]:
        for c in ("a", "b"):
            if study.replicates < 2:
                (f,), (f0,) = fits[r], fits[ref]
                diff = Effect(f[c] - f0[c], math.hypot(f[f"{c}_stderr"], f0[f"{c}_stderr"]), f["n"] + f0["n"] - 4)
            else:
                diff = _difference([f[c] for f in fits[r]], [f[c] for f in fits[ref]])
            effects[f"{c}({study.name(r)}) - {c}({study.name(ref)})"] = diff
    if study.replicates < 2:
        test = analysis.shared_coefficients_test({r: study.metrics(r) for r in runs})
        coefs = ", ".join(f"{r} a={f['a']:.2f} b={f['b']:.2f}" for r, f in test["per_run"].items())
        value = f"F-test p = {test['p_value']:.3g}; largest curve gap {test['max_curve_gap_pct']:.1f} points ({coefs})"
        how = f"differences of each run's fitted a and b from {ref}'s, standard errors from the fits, {len(runs)} runs of {artifact}"
    else:
        test = analysis.coefficients_anova(fits)
        parts = [f"{c}: ANOVA p = {test[c]['p_value']:.3g} ("
                 + ", ".join(f"{r} {test[c]['mean'][r]:.3g} ± {test[c]['sd'][r]:.2g}" for r in runs) + ")" for c in ("a", "b")]
        value = "; ".join(parts)
        how = (f"differences of each run's mean a and b over its {study.replicates} seeds from {ref}'s (mean ± s.d. over seeds), "
               f"Welch's standard error, {len(runs)} runs of {artifact}")  # fmt: skip
    return Measured(value, how, effects=effects)


@measurement(pools_seeds=True, relation="differs")
def log_linear_in_size(study: Study, artifact: str, coefficient: str) -> Measured:
    """The coefficient's least-squares slope in log10(non-embedding parameters) differs from zero, in a training
    set of the artifact with 3 or more sizes (its opposite: every slope within the claim's margin). Every seed's
    run is a point of its own (same size, its own fit), so the slope's standard error carries the seed-to-seed
    spread."""
    runs = study.runs(artifact)
    series: dict[str, list[str]] = {}
    for r in runs:
        series.setdefault(_train_data(study, r), []).append(r)
    parts, effects = [], {}
    for data, members in series.items():
        if len(members) < 3:
            continue
        x, y, per_size = [], [], []
        for r in members:
            values = [analysis.fit_run(study.metrics(s))[coefficient] for s in study.seeds(r)]
            x += [study.size(s) for s in study.seeds(r)]
            y += values
            spread = f" ± {np.std(values, ddof=1):.2g}" if len(values) > 1 else ""
            per_size.append(f"{study.size(r):,}: {np.mean(values):.3g}{spread}")
        fit = analysis.log_linear_fit(x, y)
        reg = scipy.stats.linregress(np.log10(x), y)  # the slope's standard error, n - 2 degrees of freedom
        effects[f"{data}: slope per decade"] = Effect(fit["slope"], float(reg.stderr), len(x) - 2, study.replicates)
        parts.append(f"{data}: slope {fit['slope']:+.3f} per decade, R² {fit['r2']:.2f}, p {fit['p_value']:.3g} "
                     f"({'; '.join(per_size)})")  # fmt: skip
    if not parts:
        raise NotComparable(f"{artifact} has no training set with 3 or more model sizes")
    seeds = study.replicates
    return Measured(
        "; ".join(parts),
        f"analysis.log_linear_fit of {coefficient} against non-embedding parameters, runs of {artifact}"
        + (f", {seeds} seeds a size (mean ± s.d. per size)" if seeds > 1 else ""),
        effects=effects,
    )
