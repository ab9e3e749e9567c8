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
from .relations import Effect, variance_ratio
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
    return Measured(
        value,
        f"analysis.pooled_shares over {len(runs)} runs of {artifact}, first validation step at or after {at:.3g} of training",
        interval=bootstrap(stat, runs),
    )


@measurement
def front_loaded(study: Study, artifact: str, at: float, share: float) -> Measured:
    """Both pooled shares at fraction ``at`` of training reach ``share``."""
    runs = study.runs(artifact)
    pooled = analysis.pooled_shares({r: study.metrics(r) for r in runs})
    h, r = analysis.share_at(pooled, at)
    return Measured(
        f"entropy {100 * h:.0f}%, accuracy {100 * r:.0f}%",
        f"pooled shares over {len(runs)} runs of {artifact} at {at:.3g} of training",
        holds=bool(h >= share and r >= share),
        effects={"entropy share - threshold": h - share, "accuracy share - threshold": r - share},
    )


def _val_noise(study: Study, metrics: pd.DataFrame, steps) -> np.ndarray:
    """Binomial standard error of the macro-averaged accuracy at each of ``steps`` (the law's points, in order)."""
    pts = metrics.set_index("step").loc[list(steps)]
    var = np.zeros(len(pts))
    benches = [b for b in study.val_samples if f"val_acc/{b}" in pts]
    for b in benches:
        p = pts[f"val_acc/{b}"].to_numpy()
        var += p * (1 - p) / study.val_samples[b]
    return np.sqrt(var) / len(benches)


def law_chi_square(study: Study, metrics: pd.DataFrame) -> tuple[float, int, float]:
    """One run's fit of R = -a exp(H) + b to its validation points: (χ² of its residuals against the binomial
    validation noise, its degrees of freedom n − 2, its R²)."""
    pts = analysis.validation_points(metrics)
    fit = analysis.fit_entropy_law(pts["entropy"], pts["R"])
    resid = pts["R"] - analysis.entropy_law(pts["entropy"], fit["a"], fit["b"])
    # the law's points only: a policy validated but never rolled out (verl's last one) has no entropy to fit
    se = np.maximum(_val_noise(study, metrics, pts["step"]), 1e-6)
    return float(np.sum((resid.to_numpy() / se) ** 2)), len(pts) - 2, float(fit["r2"])


@measurement(pools_seeds=True, relation="not_above")
def law_fits_within_noise(study: Study, artifact: str) -> Measured:
    """Every run's residuals from R = -a exp(H) + b are as small as validation sampling noise allows, up to the
    claim's margin: the effect per run is ρ − 1, ρ the residuals' variance over the binomial noise's, observed as
    χ² on n − 2 degrees of freedom per fit and judged by the exact χ² distribution (relations.VarianceRatio); a
    law that fits exactly leaves 0, a misfit as large as the noise 1. A run with several seeds sums its seeds'
    chi-squares and degrees of freedom (each seed has its own fit).

    The noise is binomial over every validation answer. Validation answers the same problems at every step,
    so the step-to-step noise is the answers' within-problem variance, which is smaller: the noise is
    overstated, and the test leans towards a fit. The metrics do not record per-problem outcomes to do better."""
    runs = study.runs(artifact)
    effects, parts, r2 = {}, [], []
    for run in runs:
        chi2, dof = 0.0, 0
        for seed_run in study.seeds(run):
            c, d, r = law_chi_square(study, study.metrics(seed_run))
            chi2, dof = chi2 + c, dof + d
            r2.append(r)
        effects[f"{run}: misfit over noise"] = variance_ratio(chi2, dof, study.replicates)
        parts.append(f"{run} {chi2 / dof:.2f} (chi-square {chi2:.1f} on {dof}, p {scipy.stats.chi2.sf(chi2, dof):.3g})")
    seeds = study.replicates
    return Measured(
        f"residual variance over noise: {'; '.join(parts)}; R² {min(r2):.2f}–{max(r2):.2f}",
        f"chi-square of each fit's residuals against binomial validation noise, over its degrees of freedom, {len(runs)} runs of {artifact}"
        + (f", each summed over its {seeds} seeds" if seeds > 1 else ""),
        holds=all(e.estimate <= 0 for e in effects.values()),
        effects=effects,
    )


def _train_data(study: Study, run: str) -> str:
    return study.specs[run].train_data or "train"


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
    mean = float(values.mean()) if len(values) else math.nan
    if len(values) > 1:  # the runs' spread: different models and data, so it holds the seed's variation too
        se = float(values.std(ddof=1) / math.sqrt(len(values)))
        spread, half = (
            Effect(mean, se, len(values) - 1, len(values)),
            float(scipy.stats.t.ppf(0.975, len(values) - 1) * se),
        )
    else:  # one run: no spread to judge by
        spread, half = Effect(mean), math.inf
    return Measured(
        mean,
        f"analysis.early_prediction fitted on steps <= {study.fit_steps}, mean over {len(values)} runs of {artifact}",
        interval=(mean - half, mean + half),
        spread=spread,
    )


def _difference(a: list[float], b: list[float]) -> Effect:
    """The difference of two runs' means over their seeds, Welch's standard error and degrees of freedom."""
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if va + vb > 0 else math.inf
    return Effect(float(np.mean(a) - np.mean(b)), se, df, min(len(a), len(b)))


def _curve(fit: dict, h: float) -> float:
    return fit["b"] - fit["a"] * math.exp(h)


@measurement(
    pools_seeds=True, relation=lambda spec: {"shared": "within", "different": "differs"}[spec.get("expect", "shared")]
)
def shared_coefficients(study: Study, artifact: str, expect: str = "shared") -> Measured:
    """Do the runs share one law? Each run's fitted curve R = -a exp(H) + b against the artifact's first run's, at
    both ends of the entropy range the runs observed: the curves differ by a line in exp(H), so the largest gap over
    that range is at one of its ends. ``expect`` "shared" claims every gap lies within the claim's margin
    (accuracy, equivalence); "different" that one lies beyond it (its opposite: all within).

    a and b are nearly collinear over the observed range, so each alone is poorly determined while the curve
    is not: the claim is judged on the curve, in the accuracy units its margin is set in.

    Several seeds: each seed's run fitted on its own, and the two runs' mean gap over seeds, Welch's standard
    error, so it counts only beyond seed-to-seed variation; the one-way ANOVA per coefficient is shown beside it.
    One seed: a gap between two trained runs, which one seed cannot judge (relations.Effect.between_runs); the
    pooled F-test (analysis.shared_coefficients_test) is shown beside it.
    """
    runs = study.runs(artifact)
    if len(runs) < 2:
        raise NotComparable(f"{artifact} has fewer than 2 runs at this scale")
    fits = {r: [analysis.fit_run(study.metrics(s)) for s in study.seeds(r)] for r in runs}
    entropies = np.concatenate(
        [analysis.validation_points(study.metrics(s))["entropy"].to_numpy() for r in runs for s in study.seeds(r)]
    )
    ends = (float(entropies.min()), float(entropies.max()))
    ref, effects = runs[0], {}
    for r in runs[1:]:
        for h in ends:
            if study.replicates < 2:
                (f,), (f0,) = fits[r], fits[ref]
                # a bound: no covariance
                se = math.hypot(*(g["b_stderr"] + math.exp(h) * g["a_stderr"] for g in (f, f0)))
                gap = Effect(_curve(f, h) - _curve(f0, h), se, f["n"] + f0["n"] - 4, between_runs=True)
            else:
                gap = _difference([_curve(f, h) for f in fits[r]], [_curve(f, h) for f in fits[ref]])
            effects[f"R({study.name(r)}) - R({study.name(ref)}) at H {h:.3g}"] = gap
    if study.replicates < 2:
        test = analysis.shared_coefficients_test({r: study.metrics(r) for r in runs})
        coefs = ", ".join(f"{r} a={f['a']:.2f} b={f['b']:.2f}" for r, f in test["per_run"].items())
        value = f"F-test p = {test['p_value']:.3g}; largest curve gap {test['max_curve_gap_pct']:.1f} points ({coefs})"
        how = (
            f"gaps between each run's fitted curve and {ref}'s at both ends of the observed entropy range "
            f"[{ends[0]:.3g}, {ends[1]:.3g}], {len(runs)} runs of {artifact}"
        )
    else:
        test = analysis.coefficients_anova(fits)
        parts = [
            f"{c}: ANOVA p = {test[c]['p_value']:.3g} ("
            + ", ".join(f"{r} {test[c]['mean'][r]:.3g} ± {test[c]['sd'][r]:.2g}" for r in runs)
            + ")"
            for c in ("a", "b")
        ]
        value = "; ".join(parts)
        how = (
            f"gaps between each run's fitted curve and {ref}'s at both ends of the observed entropy range "
            f"[{ends[0]:.3g}, {ends[1]:.3g}], means over {study.replicates} seeds, Welch's standard error, "
            f"{len(runs)} runs of {artifact}"
        )
    return Measured(value, how, effects=effects)


def size_trend(sizes: list[int], per_seed: list[list[float]]) -> Effect:
    """The least-squares slope per decade of size of each size's mean over its seeds, its standard error from the
    scatter of those means about the line (sizes − 2 degrees of freedom). The seeds of one size share its base
    model, so they are not independent points: the per-size mean is the unit, and its scatter holds both the
    base models' and the seeds' variation."""
    means = [float(np.mean(v)) for v in per_seed]
    reg = scipy.stats.linregress(np.log10(sizes), means)
    return Effect(float(reg.slope), float(reg.stderr), len(sizes) - 2, spread_over="model sizes")


@measurement(pools_seeds=True, relation="differs")
def log_linear_in_size(study: Study, artifact: str, coefficient: str) -> Measured:
    """The coefficient's least-squares slope in log10(non-embedding parameters) lies beyond the claim's margin,
    in a training set of the artifact with 3 or more sizes (its opposite: every slope within the margin). The
    slope is fitted to each size's mean over its seeds (``size_trend``): more sizes, not more seeds, narrow it."""
    runs = study.runs(artifact)
    series: dict[str, list[str]] = {}
    for r in runs:
        series.setdefault(_train_data(study, r), []).append(r)
    parts, effects = [], {}
    for data, members in series.items():
        if len(members) < 3:
            continue
        sizes, values, per_size = [], [], []
        for r in members:
            v = [analysis.fit_run(study.metrics(s))[coefficient] for s in study.seeds(r)]
            sizes.append(study.size(r))
            values.append(v)
            spread = f" ± {np.std(v, ddof=1):.2g}" if len(v) > 1 else ""
            per_size.append(f"{study.size(r):,}: {np.mean(v):.3g}{spread}")
        fit = analysis.log_linear_fit(sizes, [float(np.mean(v)) for v in values])
        effects[f"{data}: slope per decade"] = size_trend(sizes, values)
        parts.append(
            f"{data}: slope {fit['slope']:+.3f} per decade, R² {fit['r2']:.2f}, p {fit['p_value']:.3g} "
            f"({'; '.join(per_size)})"
        )
    if not parts:
        raise NotComparable(f"{artifact} has no training set with 3 or more model sizes")
    seeds = study.replicates
    return Measured(
        "; ".join(parts),
        f"analysis.log_linear_fit of {coefficient} against non-embedding parameters, runs of {artifact}"
        + (f", fitted to each size's mean over its {seeds} seeds (mean ± s.d. per size)" if seeds > 1 else ""),
        effects=effects,
    )
