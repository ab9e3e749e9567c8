"""The audit: every claim of the ledger (``claims.yaml``) beside what this run measured, with a verdict.

A claim names a measurement (a function registered here with ``@measurement``)
and the artifact whose runs it reads, so the audit measures exactly the runs a
figure or table draws. Verdicts:

* ``reproduced`` / ``not reproduced``: a qualitative claim's test, at any
  scale; a number within / outside its tolerance, at paper scale.
* ``not comparable at this scale``: a number at mini scale (the measured
  analogue is still shown), a claim whose runs this scale does not have, or a
  paper value missing from the project's copy of the paper. The reason is given.

Tolerances come from the ledger and are set before any result: statistical
(a confidence interval over runs, binomial noise of a benchmark of that
size) where the data give a spread, or a stated factor (``tolerance.factor``:
measured/paper within [1/factor, factor]) where the paper reports one value
of one run and nothing to build an interval from. Never fitted to a result.

The companion power-sampling study (Karan & Du, 2025) is audited from its
answers (``results/power/samples``). The answers to one problem are correlated
(an easy problem is answered right by every method, many times), so methods
are compared per problem, paired over the problems all methods answered, with
the standard error over problems: the problem, not the answer, is the
independent unit.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.stats

from . import analysis, evaluate, power_study

REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE = "reproduced", "not reproduced", "not comparable at this scale"
Z95 = scipy.stats.norm.ppf(0.975)
Z95_ONE_SIDED = scipy.stats.norm.ppf(0.95)
# The power-sampling study's table and figures: power_study has one function per rule of power.smk.
# Its methods of the base model, named as common.smk's power_methods names them; the RL methods are
# found by the run they sample.
PLAIN_POWER_METHODS = ("base", "low-temp", "power")
POWER_ARTIFACTS = tuple(name for name in vars(power_study) if re.fullmatch(r"power\d\d_\w+", name))


class NotComparable(Exception):
    """The measurement cannot be made at this scale; the message says why."""


@dataclass
class Study:
    """What the audit reads: run outputs and the per-run settings, loaded lazily."""

    scale: str
    artifacts: dict[str, list[str]]  # artifact -> runs
    specs: dict[str, dict]  # run -> resolved run spec
    metrics_paths: dict[str, str]
    summary_paths: dict[str, str]
    model_paths: dict[str, str]  # model -> directory holding its config.json
    val_samples: dict[str, int]  # benchmark -> validation samples per validation point
    bench_sizes: dict[str, int]  # benchmark -> problems
    bench_roles: dict[str, str]  # the paper's benchmark name -> this scale's benchmark
    model_roles: dict[str, str]  # the paper's model name -> this scale's model
    fit_steps: int
    # The power-sampling study, empty when the scale has none: "model" (the base model sampled),
    # "methods" (name -> settings; PLAIN_POWER_METHODS among them), "runs" (RL
    # method -> the run whose checkpoint it samples), "artifacts" (artifact -> methods it draws),
    # "problems" (benchmark -> problems answered) and "n" (answers per problem).
    power: dict = field(default_factory=dict)
    power_paths: dict[str, str] = field(default_factory=dict)  # method -> its answers (parquet)
    _cache: dict = field(default_factory=dict)

    def runs(self, artifact: str) -> list[str]:
        if artifact not in self.artifacts:
            raise NotComparable(f"this scale has no runs for {artifact}")
        return self.artifacts[artifact]

    def metrics(self, run: str) -> pd.DataFrame:
        key = ("metrics", run)
        if key not in self._cache:
            self._cache[key] = pd.read_parquet(self.metrics_paths[run])
        return self._cache[key]

    def summary(self, run: str) -> pd.DataFrame:
        key = ("summary", run)
        if key not in self._cache:
            self._cache[key] = pd.read_parquet(self.summary_paths[run])
        return self._cache[key]

    def samples(self, method: str) -> pd.DataFrame:
        key = ("samples", method)
        if key not in self._cache:
            self._cache[key] = pd.read_parquet(self.power_paths[method])
        return self._cache[key]

    def power_study(self) -> dict:
        if not self.power:
            raise NotComparable("this scale has no power-sampling study")
        return self.power

    def power_methods(self, artifact: str) -> list[str]:
        return self.power_study()["artifacts"][artifact]

    def size(self, run: str) -> int:
        model = self.specs[run]["model"]
        key = ("size", model)
        if key not in self._cache:
            self._cache[key] = analysis.non_embedding_params(self.model_paths[model])
        return self._cache[key]

    def method(self, run: str) -> str:
        return method(self.specs[run])

    def test_average(self, run: str) -> float:
        """Mean test accuracy over benchmarks (%), Table 2's Avg."""
        return float(analysis.benchmark_accuracy({run: self.summary(run)}).loc[run, "Avg."])


def method(spec: dict) -> str:
    """The paper's name for what a run does to the loss: GRPO, Clip-higher, Clip-Cov, KL-Cov, Entropy loss, Reference KL."""
    loss = spec["loss"]
    if loss["loss_mode"] == "clip_cov":
        return "Clip-Cov"
    if loss["loss_mode"] == "kl_cov":
        return "KL-Cov"
    if loss["entropy_coeff"]:
        return "Entropy loss"
    if loss["kl_loss_coef"]:
        return "Reference KL"
    if loss["clip_ratio_high"] > loss["clip_ratio_low"]:
        return "Clip-higher"
    return {"grpo": "GRPO", "rloo": "RLOO", "reinforce_plus_plus": "REINFORCE++", "prime": "PRIME"}[spec["algorithm"]]


@dataclass
class Measured:
    value: float | str
    how: str  # exactly what was computed, on which runs
    holds: bool | None = None  # a qualitative test's outcome
    interval: tuple[float, float] | None = None  # a number's acceptance interval, when it comes from the data


MEASUREMENTS: dict[str, Callable[..., Measured]] = {}


def measurement(fn):
    MEASUREMENTS[fn.__name__] = fn
    return fn


# ---- measurements -----------------------------------------------------------------------------


def _bootstrap(stat, items: list, n: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of ``stat`` over resamples of ``items`` (runs) with replacement."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n):
        pick = [items[i] for i in rng.integers(0, len(items), len(items))]
        try:
            values.append(stat(pick))
        except (ValueError, ZeroDivisionError):
            continue
    values = np.asarray([v for v in values if np.isfinite(v)])
    return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))


@measurement
def cumulative_share(study: Study, artifact: str, quantity: str, at: float) -> Measured:
    """Pooled share (%) of the entropy drop or accuracy gain reached at a fraction of training, with a
    bootstrap interval over runs (the paper pools its runs the same way)."""
    runs = study.runs(artifact)
    column = {"entropy": "entropy_share", "performance": "perf_share"}[quantity]

    def stat(picked):
        shares = analysis.pooled_shares({f"{i}:{r}": study.metrics(r) for i, r in enumerate(picked)})
        return 100 * analysis.share_at(shares, at)[column == "perf_share"]

    value = stat(runs)
    return Measured(value, f"analysis.pooled_shares over {len(runs)} runs of {artifact}, first validation step at or after {at:.3g} of training",
                    interval=_bootstrap(stat, runs))  # fmt: skip


@measurement
def front_loaded(study: Study, artifact: str, at: float, share: float) -> Measured:
    """Both pooled shares at fraction ``at`` of training reach ``share``."""
    runs = study.runs(artifact)
    pooled = analysis.pooled_shares({r: study.metrics(r) for r in runs})
    h, r = analysis.share_at(pooled, at)
    return Measured(f"entropy {100 * h:.0f}%, accuracy {100 * r:.0f}%", f"pooled shares over {len(runs)} runs of {artifact} at {at:.3g} of training",
                    holds=bool(h >= share and r >= share))  # fmt: skip


def _val_noise(study: Study, metrics: pd.DataFrame) -> np.ndarray:
    """Binomial standard error of each validation point's macro-averaged accuracy."""
    pts = metrics.loc[metrics["val_acc"].notna()].sort_values("step")
    var = np.zeros(len(pts))
    benches = [b for b in study.val_samples if f"val_acc/{b}" in pts]
    for b in benches:
        p = pts[f"val_acc/{b}"].to_numpy()
        var += p * (1 - p) / study.val_samples[b]
    return np.sqrt(var) / len(benches)


@measurement
def law_fits_within_noise(study: Study, artifact: str) -> Measured:
    """Every run's residuals from R = -a exp(H) + b are consistent with validation sampling noise:
    chi-square = sum(residual^2 / SE^2) on n - 2 degrees of freedom, Bonferroni over runs."""
    runs = study.runs(artifact)
    pvals, r2 = {}, {}
    for run in runs:
        m = study.metrics(run)
        pts = analysis.validation_points(m)
        fit = analysis.fit_entropy_law(pts["entropy"], pts["R"])
        resid = pts["R"] - analysis.entropy_law(pts["entropy"], fit["a"], fit["b"])
        se = np.maximum(_val_noise(study, m), 1e-6)
        chi2 = float(np.sum((resid.to_numpy() / se) ** 2))
        pvals[run] = float(scipy.stats.chi2.sf(chi2, len(pts) - 2))
        r2[run] = fit["r2"]
    worst = min(pvals, key=pvals.get)
    return Measured(f"smallest p = {pvals[worst]:.3g} ({worst}); R² {min(r2.values()):.2f}–{max(r2.values()):.2f}",
                    f"chi-square of each fit's residuals against binomial validation noise, {len(runs)} runs of {artifact}",
                    holds=bool(min(pvals.values()) >= 0.05 / len(runs)))  # fmt: skip


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
    half = float(scipy.stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.inf
    return Measured(mean, f"analysis.early_prediction fitted on steps <= {study.fit_steps}, mean over {len(values)} runs of {artifact}",
                    interval=(mean - half, mean + half))  # fmt: skip


@measurement
def shared_coefficients(study: Study, artifact: str, expect: str = "shared") -> Measured:
    """F-test of one (a, b) for all runs against one per run. ``expect`` "shared" holds when p >= 0.05
    (no evidence the runs differ); "different" holds when p < 0.05."""
    runs = study.runs(artifact)
    if len(runs) < 2:
        raise NotComparable(f"{artifact} has fewer than 2 runs at this scale")
    test = analysis.shared_coefficients_test({r: study.metrics(r) for r in runs})
    coefs = ", ".join(f"{r} a={f['a']:.2f} b={f['b']:.2f}" for r, f in test["per_run"].items())
    holds = test["p_value"] >= 0.05 if expect == "shared" else test["p_value"] < 0.05
    return Measured(f"p = {test['p_value']:.3g}; largest curve gap {test['max_curve_gap_pct']:.1f} points ({coefs})",
                    f"analysis.shared_coefficients_test over {len(runs)} runs of {artifact}", holds=bool(holds))  # fmt: skip


@measurement
def log_linear_in_size(study: Study, artifact: str, coefficient: str) -> Measured:
    """The coefficient's least-squares slope in log10(non-embedding parameters) differs from zero (p < 0.05),
    in every training set of the artifact with 3 or more sizes."""
    runs = study.runs(artifact)
    series: dict[str, list[str]] = {}
    for r in runs:
        series.setdefault(_train_data(study, r), []).append(r)
    parts, holds = [], True
    for data, members in series.items():
        if len(members) < 3:
            continue
        x = [study.size(r) for r in members]
        y = [analysis.fit_run(study.metrics(r))[coefficient] for r in members]
        fit = analysis.log_linear_fit(x, y)
        parts.append(f"{data}: slope {fit['slope']:+.3f} per decade, R² {fit['r2']:.2f}, p {fit['p_value']:.3g}")
        holds &= fit["p_value"] < 0.05
    if not parts:
        raise NotComparable(f"{artifact} has no training set with 3 or more model sizes")
    return Measured("; ".join(parts), f"analysis.log_linear_fit of {coefficient} against non-embedding parameters, runs of {artifact}", holds=bool(holds))


def _quantity(column: str) -> str:
    return {analysis.BANDIT_COV: "bandit covariance (Eq. 8-9)", analysis.TOKEN_COV: "token covariance (Eq. 10, all tokens)"}.get(column, column)


@measurement
def covariance_tracks_entropy(study: Study, artifact: str, column: str = analysis.BANDIT_COV) -> Measured:
    """Positive, significant Pearson correlation over steps between the covariance (by default the
    paper's Figure 8 quantity, the bandit covariance) at step t and −(H[t+1] − H[t])."""
    run = study.runs(artifact)[0]
    d = analysis.covariance_dynamics(study.metrics(run), column)
    return Measured(f"r = {d['pearson_r']:.2f} (p = {d['p_value']:.3g}, {d['n_steps']} steps)",
                    f"analysis.covariance_dynamics on {run}: Pearson correlation of {column}, the {_quantity(column)}, at step t with -(H[t+1] - H[t])",
                    holds=bool(d["pearson_r"] > 0 and d["p_value"] < 0.05))  # fmt: skip


@measurement
def covariance_positive(study: Study, artifact: str, share: float, column: str = analysis.BANDIT_COV) -> Measured:
    run = study.runs(artifact)[0]
    d = analysis.covariance_dynamics(study.metrics(run), column)
    return Measured(f"{100 * d['positive_share']:.0f}% of steps (mean {d['mean_cov']:.3g})",
                    f"share of the steps of {run} with {column} > 0, the {_quantity(column)}",
                    holds=bool(d["positive_share"] >= share))  # fmt: skip


@measurement
def covariance_by_difficulty(study: Study, artifact: str) -> Measured:
    """The bandit covariance of the prompts with accuracy 1/8 lies below that of the prompts with
    accuracy 7/8: one-sided Wilcoxon signed-rank test over the steps with both, p < 0.05."""
    run = study.runs(artifact)[0]
    d = analysis.covariance_by_difficulty(study.metrics(run))
    if d["n_paired_steps"] < 5:
        raise NotComparable(f"{run} has {d['n_paired_steps']} steps with prompts of both accuracy 1/8 and 7/8; the test needs 5")
    means = ", ".join(f"acc {analysis.BANDIT_ACC[k]:g}: {v:.3g}" for k, v in d["mean"].items())
    p = d["hard_below_easy_p"]
    return Measured(f"mean bandit covariance {means}; one-sided Wilcoxon p = {p:.3g}" if np.isfinite(p)
                    else f"mean bandit covariance {means}; no test: the two groups never differ",
                    f"analysis.covariance_by_difficulty on {run}: {analysis.HARDEST} against {analysis.EASIEST} over the {d['n_paired_steps']} steps with both",
                    holds=bool(p < 0.05))  # fmt: skip


@measurement
def covariance_group(study: Study, artifact: str, group: str) -> Measured:
    """One cell of Table 1: the token covariance (Eq. 10) of one group at training step 1."""
    run = study.runs(artifact)[0]
    dist = analysis.covariance_distribution(study.metrics(run))
    return Measured(float(dist[group]), f"{group} of {run} at training step 1 (its first step with a measured covariance, row {dist.name})")


@measurement
def covariance_outliers(study: Study, artifact: str, paper_top: float, paper_all: float, within: float) -> Measured:
    """Table 1's outliers: the top 0.02% of tokens over the all-token mean at training step 1, at least
    the paper's ratio (``paper_top`` / ``paper_all``) divided by ``within``. The ratio is undefined, and
    the claim not reproduced, when the all-token mean is not positive."""
    run = study.runs(artifact)[0]
    dist = analysis.covariance_distribution(study.metrics(run))
    top, mean = float(dist["cov_top0.02"]), float(dist["cov_all"])
    paper = paper_top / paper_all
    needed = paper / within
    how = (f"Table 1 columns of {run} at training step 1 (row {dist.name}); paper {paper_top:g} / {paper_all:g} = {paper:.0f}x, "
           f"reproduced at {needed:.0f}x or more (within a factor {within:g} of the paper's ratio)")  # fmt: skip
    if not mean > 0:
        return Measured(f"undefined: the all-token mean is {mean:.3g} (top 0.02% {top:.3g}); paper {paper:.0f}x", how, holds=False)
    ratio = top / mean
    return Measured(f"top 0.02% / all = {top:.3g} / {mean:.3g} = {ratio:.0f}x; paper {paper:.0f}x", how, holds=bool(ratio >= needed))


def _artifact_runs(study: Study, artifact: str, also: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The runs of ``artifact`` and of the artifacts in ``also``, each once; the artifacts this scale
    does not have are skipped, and none at all is not comparable."""
    runs, missing = [], []
    for name in (artifact, *also):
        try:
            runs += [r for r in study.runs(name) if r not in runs]
        except NotComparable:
            missing.append(name)
    if not runs:
        raise NotComparable(f"this scale has no runs for {', '.join(missing)}")
    return runs


def _mean_column(study: Study, run: str, column: str) -> tuple[float, int]:
    """Mean over the steps where ``column`` is defined, and how many steps that is."""
    m = study.metrics(run)
    if column not in m.columns:
        raise ValueError(f"metrics of run {run!r} have no column {column!r} (written by an older trainer?)")
    values = m[column].dropna()
    return (float(values.mean()) if len(values) else math.nan), len(values)


def _baseline(study: Study, runs: list[str], model: str | None = None) -> str:
    base = [r for r in runs if study.method(r) == "GRPO" and (model is None or study.specs[r]["model"] == model)]
    if len(base) != 1:
        raise NotComparable(f"expected one GRPO baseline among {runs}, found {base}")
    return base[0]


def _final_entropy(study: Study, run: str) -> float:
    m = study.metrics(run)
    return analysis.final_value(m, "entropy", last=max(3, len(m) // 10))


@measurement
def entropy_rises_with(study: Study, artifact: str, parameter: str, method_name: str) -> Measured:
    """Final entropy (mean of the last 10% of steps) strictly increases with a treatment parameter;
    the GRPO baseline enters at 0 when the parameter is a coefficient of an added loss term."""
    runs = study.runs(artifact)
    points = [(study.specs[r]["loss"][parameter], _final_entropy(study, r)) for r in runs if study.method(r) == method_name]
    if parameter in ("entropy_coeff", "kl_loss_coef"):
        points.append((0.0, _final_entropy(study, _baseline(study, runs))))
    if len(points) < 2:
        raise NotComparable(f"{artifact} has fewer than 2 {method_name} settings")
    points.sort()
    holds = all(b[1] > a[1] for a, b in itertools.pairwise(points))
    return Measured(", ".join(f"{p:g}: {h:.3f}" for p, h in points), f"final entropy (last 10% of steps) per {parameter}, runs of {artifact}", holds=bool(holds))


def _start_entropy(study: Study, run: str) -> float:
    """Mean entropy over the first 10% of steps (at least 3): where a run starts, as ``_final_entropy``
    is where it ends."""
    m = study.metrics(run).sort_values("step")
    return float(m["entropy"].dropna().head(max(3, len(m) // 10)).mean())


@measurement
def entropy_loss_sensitivity(
    study: Study, artifact: str, parameter: str, method_name: str, band: float, explode: float
) -> Measured:
    """Section 4.1's reading of Figure 9, by rank of the coefficient (so it holds at any scale's values):

    - the smallest coefficient barely moves entropy: its run's final entropy lies within ``band``
      times the entropy the GRPO baseline consumed (its start minus its end) of GRPO's final entropy;
    - the largest makes it explode: its run ends above its own starting entropy and above
      ``explode`` times GRPO's final entropy.

    Start and end are the means over the first and last 10% of steps. Coefficients come from the runs' specs.
    """
    runs = study.runs(artifact)
    treated = sorted((study.specs[r]["loss"][parameter], r) for r in runs if study.method(r) == method_name)
    if len({c for c, _ in treated}) < 2:
        raise NotComparable(f"{artifact} has fewer than 2 {method_name} coefficients")
    base = _baseline(study, runs)
    h0_start, h0_end = _start_entropy(study, base), _final_entropy(study, base)
    (c_small, small), (c_large, large) = treated[0], treated[-1]
    h_small = _final_entropy(study, small)
    h_large_start, h_large = _start_entropy(study, large), _final_entropy(study, large)
    width = band * abs(h0_start - h0_end)
    barely = abs(h_small - h0_end) <= width
    explodes = h_large > h_large_start and h_large > explode * h0_end
    value = (f"GRPO {h0_start:.3g} → {h0_end:.3g}; smallest {parameter} {c_small:g} ends {h_small:.3g} "
             f"({h_small - h0_end:+.3g}, band ±{width:.3g}: {'barely moves' if barely else 'moves'}); "
             f"largest {c_large:g} {h_large_start:.3g} → {h_large:.3g} (explodes above max(start, {explode:g}× GRPO's end = "
             f"{explode * h0_end:.3g}): {'yes' if explodes else 'no'}); all: "
             + ", ".join(f"{c:g}: {_final_entropy(study, r):.3g}" for c, r in treated))  # fmt: skip
    return Measured(value, f"entropy, means over the first and last 10% of steps, {method_name} runs of {artifact} by rank of {parameter}, against its GRPO run",
                    holds=bool(barely and explodes))  # fmt: skip


@measurement
def entropy_ratio_late(study: Study, artifact: str, method: str, factor: float, tail: float) -> Measured:
    """Per model of the artifact, the ``method`` run's mean entropy over the last ``tail`` of training
    is at least ``factor`` times its GRPO run's (Section 4.3: once the baseline plateaus)."""
    runs = study.runs(artifact)
    picked = [r for r in runs if study.method(r) == method]
    if not picked:
        raise NotComparable(f"{artifact} has no {method} run")

    def late(run):
        m = study.metrics(run).sort_values("step")
        first, last = m["step"].min(), m["step"].max()
        return float(m.loc[m["step"] >= first + (1 - tail) * (last - first), "entropy"].mean())

    parts, holds = [], True
    for r in picked:
        base = _baseline(study, runs, study.specs[r]["model"])
        h, h0 = late(r), late(base)
        ratio = h / h0 if h0 > 0 else math.inf
        parts.append(f"{r} {h:.3g} vs {base} {h0:.3g}: {ratio:.3g}×")
        holds &= ratio >= factor
    return Measured("; ".join(parts), f"mean entropy over the last {tail:.3g} of the steps, {method} over the same model's GRPO run, runs of {artifact}",
                    holds=bool(holds))  # fmt: skip


@measurement
def clip_cov_bounds(study: Study, artifact: str, bound: str, exceeds: float, also: list[str] = ()) -> Measured:
    """Every Clip-Cov run's covariance bound (``bound`` of its spec, e.g. clip_cov_lb) over the mean over
    steps of its batch-level token covariance (``cov_all``, Eq. 10) exceeds ``exceeds``; a mean that
    is not positive leaves the ratio undefined (not reproduced)."""
    runs = [r for r in _artifact_runs(study, artifact, also) if study.method(r) == "Clip-Cov"]
    if not runs:
        raise NotComparable(f"{', '.join((artifact, *also))} have no Clip-Cov run")
    parts, holds = [], True
    for r in runs:
        lb = float(study.specs[r]["loss"][bound])
        mean, steps = _mean_column(study, r, analysis.TOKEN_COV)
        if mean > 0:
            parts.append(f"{r}: {bound} {lb:g} / mean cov_all {mean:.3g} = {lb / mean:.3g}×")
            holds &= lb / mean > exceeds
        else:
            parts.append(f"{r}: mean cov_all {mean:.3g} over {steps} steps, ratio undefined")
            holds = False
    return Measured("; ".join(parts), f"{bound} from each Clip-Cov run's spec over its mean token covariance (Eq. 10, all tokens of a batch) over steps",
                    holds=bool(holds))  # fmt: skip


@measurement
def cliphigher_covariance(study: Study, artifact: str, also: list[str] = ()) -> Measured:
    """Mean Eq. 10 covariance of the tokens clip-higher adds to the gradient (``cliphigher_cov``), over
    the steps where it is defined, pooled over the Clip-higher runs (every defined step weighs the same)."""
    runs = [r for r in _artifact_runs(study, artifact, also) if study.method(r) == "Clip-higher"]
    if not runs:
        raise NotComparable(f"{', '.join((artifact, *also))} have no Clip-higher run")
    per_run = {r: _mean_column(study, r, "cliphigher_cov") for r in runs}
    steps = [v for r in runs for v in study.metrics(r)["cliphigher_cov"].dropna()]
    if not steps:
        raise NotComparable(f"no step of {', '.join(runs)} has a token that clip-higher adds")
    detail = ", ".join(f"{r} {mean:.3g} ({n} steps)" for r, (mean, n) in per_run.items())
    return Measured(float(np.mean(steps)), f"mean of cliphigher_cov over the {len(steps)} steps where it is defined, pooled over {detail}")


@measurement
def touched_fraction(study: Study, artifact: str, low: float, high: float, also: list[str] = ()) -> Measured:
    """Every Clip-Cov and KL-Cov run's mean over steps of ``cov_touched_frac`` (the share of response
    tokens detached or penalised) lies in [``low``, ``high``]."""
    runs = [r for r in _artifact_runs(study, artifact, also) if study.method(r) in ("Clip-Cov", "KL-Cov")]
    if not runs:
        raise NotComparable(f"{', '.join((artifact, *also))} have no Clip-Cov or KL-Cov run")
    parts, holds = [], True
    for r in runs:
        mean, _ = _mean_column(study, r, "cov_touched_frac")
        parts.append(f"{r} ({study.method(r)}) {mean:.3g}")
        holds &= low <= mean <= high
    return Measured("; ".join(parts), f"mean over steps of cov_touched_frac, Clip-Cov and KL-Cov runs of {', '.join((artifact, *also))}, against [{low:g}, {high:g}]",
                    holds=bool(holds))  # fmt: skip


@measurement
def treatment_entropy_above_baseline(study: Study, artifact: str, methods: list[str]) -> Measured:
    """Every run of ``methods`` ends with more entropy than the GRPO run of the same model."""
    runs = study.runs(artifact)
    parts, holds = [], True
    for r in runs:
        if study.method(r) in methods:
            base = _baseline(study, runs, study.specs[r]["model"])
            h, h0 = _final_entropy(study, r), _final_entropy(study, base)
            parts.append(f"{study.method(r)} {h:.3f} vs {h0:.3f}")
            holds &= h > h0
    if not parts:
        raise NotComparable(f"{artifact} has no {methods} runs")
    return Measured("; ".join(parts), f"final entropy (last 10% of steps) against the same model's GRPO run, runs of {artifact}", holds=bool(holds))


def _binomial_se(accuracy_pct: float, n: int) -> float:
    """Standard error (points) of an accuracy measured on ``n`` problems; floored so 0% and 100% keep some."""
    p = accuracy_pct / 100
    return 100 * math.sqrt(max(p * (1 - p), 1e-4) / n)


def _avg_se(study: Study, run: str) -> float:
    """Binomial standard error (points) of a run's benchmark mean, from each benchmark's problem count."""
    s = study.summary(run).set_index("benchmark")
    var = sum(p * (1 - p) / study.bench_sizes[b] for b, p in s["avg_at_n"].items())
    return 100 * math.sqrt(var) / len(s)


@measurement
def accuracy_vs_baseline(study: Study, artifact: str, methods: list[str], direction: str) -> Measured:
    """Each run of ``methods`` against the same model's GRPO run on the test benchmarks' mean.

    ``direction`` "higher": every run scores above GRPO. "lower": every run scores below. "not_higher":
    no run beats GRPO by more than 1.96 standard errors of the difference (binomial, per benchmark size).
    """
    runs = study.runs(artifact)
    parts, holds = [], True
    for r in runs:
        if study.method(r) not in methods:
            continue
        base = _baseline(study, runs, study.specs[r]["model"])
        diff = study.test_average(r) - study.test_average(base)
        se = math.hypot(_avg_se(study, r), _avg_se(study, base))
        parts.append(f"{r} {diff:+.1f} ± {Z95 * se:.1f}")
        holds &= {"higher": diff > 0, "lower": diff < 0, "not_higher": diff <= Z95 * se}[direction]
    if not parts:
        raise NotComparable(f"{artifact} has no {methods} runs")
    return Measured("; ".join(parts), f"test-set mean accuracy minus the same model's GRPO run (points), runs of {artifact}", holds=bool(holds))


@measurement
def kl_cov_stabler(study: Study, artifact: str) -> Measured:
    """Per model, KL-Cov's entropy curves are smoother (late step-to-step changes, averaged over its
    settings) than Clip-Cov's."""
    by_model: dict[str, dict[str, list[float]]] = {}
    for r in study.runs(artifact):
        if study.method(r) in ("Clip-Cov", "KL-Cov"):
            by_model.setdefault(study.specs[r]["model"], {}).setdefault(study.method(r), []).append(analysis.entropy_stability(study.metrics(r)))
    pairs = {m: {k: float(np.mean(v)) for k, v in d.items()} for m, d in by_model.items() if len(d) == 2}
    if not pairs:
        raise NotComparable(f"{artifact} has no model with both Clip-Cov and KL-Cov")
    value = "; ".join(f"{m}: KL-Cov {v['KL-Cov']:.4f} vs Clip-Cov {v['Clip-Cov']:.4f}" for m, v in pairs.items())
    return Measured(value, f"analysis.entropy_stability (std of entropy changes, second half), mean per method, runs of {artifact}",
                    holds=all(v["KL-Cov"] < v["Clip-Cov"] for v in pairs.values()))  # fmt: skip


@measurement
def response_length_grows(study: Study, artifact: str, methods: list[str]) -> Measured:
    runs = [r for r in study.runs(artifact) if study.method(r) in methods]
    if not runs:
        raise NotComparable(f"{artifact} has no {methods} runs")
    parts, holds = [], True
    for r in runs:
        m = study.metrics(r).sort_values("step")
        k = max(3, len(m) // 10)
        start, end = float(m["response_length"].head(k).mean()), float(m["response_length"].tail(k).mean())
        parts.append(f"{r} {start:.0f}→{end:.0f}")
        holds &= end > start
    return Measured("; ".join(parts), "mean response length, first vs last 10% of steps", holds=bool(holds))


def _table2_run(study: Study, artifact: str, model: str, method_name: str) -> str:
    scale_model = study.model_roles.get(model)
    picked = [r for r in study.runs(artifact) if study.specs[r]["model"] == scale_model and study.method(r) == method_name]
    if len(picked) != 1:
        raise NotComparable(f"no single {method_name} run of {model} ({scale_model}) in {artifact}")
    return picked[0]


@measurement
def benchmark_cell(study: Study, artifact: str, model: str, method: str, benchmark: str) -> Measured:
    """One Table 2 cell (%): 1.96·√2 binomial standard errors at the benchmark's size bound the gap
    between two independent evaluations of the same accuracy."""
    run = _table2_run(study, artifact, model, method)
    bench = study.bench_roles.get(benchmark)
    if bench is None:
        raise NotComparable(f"no benchmark plays {benchmark} at this scale")
    s = study.summary(run).set_index("benchmark")
    value = 100 * float(s.loc[bench, "avg_at_n"])
    half = Z95 * math.sqrt(2) * _binomial_se(value, study.bench_sizes[bench])
    return Measured(value, f"avg@n of {run} on {bench}", interval=(value - half, value + half))


@measurement
def benchmark_average(study: Study, artifact: str, model: str, method: str) -> Measured:
    run = _table2_run(study, artifact, model, method)
    value = study.test_average(run)
    half = Z95 * math.sqrt(2) * _avg_se(study, run)
    return Measured(value, f"mean over benchmarks of {run}", interval=(value - half, value + half))


@measurement
def best_gain_over_grpo(study: Study, artifact: str, model: str, benchmark: str | None = None) -> Measured:
    """The better of Clip-Cov and KL-Cov minus GRPO (points), on the benchmark mean or one benchmark."""
    base = _table2_run(study, artifact, model, "GRPO")

    def score(run):
        if benchmark is None:
            return study.test_average(run)
        bench = study.bench_roles[benchmark]
        return 100 * float(study.summary(run).set_index("benchmark").loc[bench, "avg_at_n"])

    best = max((_table2_run(study, artifact, model, m) for m in ("Clip-Cov", "KL-Cov")), key=score)
    value = score(best) - score(base)
    if benchmark is None:
        se = math.hypot(_avg_se(study, best), _avg_se(study, base))
    else:
        n = study.bench_sizes[study.bench_roles[benchmark]]
        se = math.hypot(_binomial_se(score(best), n), _binomial_se(score(base), n))
    half = Z95 * math.sqrt(2) * se
    return Measured(value, f"{best} minus {base} ({'mean over benchmarks' if benchmark is None else benchmark})", interval=(value - half, value + half))


# ---- power sampling beside RL (Karan & Du, 2025) ---------------------------------------------


def _power_method(study: Study, artifact: str, role: str) -> str:
    """The method of ``artifact`` that plays ``role``: base, low-temp or power by the study's roles,
    an RL method (GRPO, Clip-Cov, KL-Cov) by the run whose checkpoint it samples."""
    drawn = study.power_methods(artifact)
    if role in PLAIN_POWER_METHODS:
        picked = [role]
    else:
        picked = [m for m, run in study.power["runs"].items() if run in study.specs and study.method(run) == role]
    picked = [m for m in picked if m in drawn]
    if len(picked) != 1:
        raise NotComparable(f"no single {role} method among the methods of {artifact} ({', '.join(drawn)})")
    return picked[0]


def _power_bench(study: Study, benchmark: str | None) -> str | None:
    """This scale's benchmark playing the paper's ``benchmark`` in the power study (None: all of them)."""
    if benchmark is None:
        return None
    problems = study.power_study()["problems"]
    bench = study.bench_roles.get(benchmark)
    if bench not in problems:
        raise NotComparable(f"no benchmark of the power-sampling study ({', '.join(problems)}) plays {benchmark}")
    return bench


_PER_PROBLEM = {"accuracy": ("correct", 100), "loglik": ("base_loglik_per_token", 1), "drawn": ("drawn_tokens", 1)}
_QUANTITY = {"accuracy": "single-shot accuracy (%)", "pass_at_n": "unbiased pass@n (%, k = answers per problem)",
             "loglik": "base-model log-likelihood per answer token", "drawn": "tokens drawn per answer"}  # fmt: skip


def _answers(study: Study, method: str, bench: str | None) -> pd.DataFrame:
    frame = study.samples(method)
    return frame if bench is None else frame[frame["benchmark"] == bench]


def _per_problem(study: Study, method: str, quantity: str, bench: str | None) -> pd.Series:
    """One value per (benchmark, problem): single-shot accuracy (%), unbiased pass@n (%) at the
    largest k the answers allow, mean base log-likelihood per token, or tokens drawn per answer."""
    groups = _answers(study, method, bench).groupby(["benchmark", "problem_id"])
    if quantity == "pass_at_n":
        counts = groups["correct"].agg(["size", "sum"])
        k = study.power["n"]
        return pd.Series([100 * evaluate.pass_at_k(int(n), int(c), k) for n, c in counts.to_numpy()], index=counts.index)
    column, scale = _PER_PROBLEM[quantity]
    return scale * groups[column].mean()


def _paired(a: pd.Series, b: pd.Series) -> tuple[float, float, int]:
    """Mean of a - b over the problems both answered, and its standard error over those problems:
    the same problems make the methods' errors correlated (pairing removes that), and a problem's
    answers are correlated with each other (the problem, not the answer, is the unit)."""
    d = (a - b).dropna()
    if len(d) < 2:
        raise NotComparable("fewer than 2 problems answered by both methods")
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d))), len(d)


_RELATIONS = {
    "above": lambda d, se: d > Z95_ONE_SIDED * se,  # significantly higher, one-sided 5%
    "not_below": lambda d, se: d >= -Z95 * se,  # not significantly lower
    "within": lambda d, se: abs(d) <= Z95 * se,  # not significantly different
}


@measurement
def power_compare(
    study: Study, artifact: str, quantity: str, order: list[str], relation: str, benchmark: str | None = None
) -> Measured:
    """Each method of ``order`` against the next on a per-problem quantity, paired over problems:
    ``relation`` "above" holds when the difference is positive at the one-sided 5% level,
    "not_below" when it is not below -1.96 SE, "within" when it lies within ±1.96 SE."""
    bench = _power_bench(study, benchmark)
    methods = [_power_method(study, artifact, role) for role in order]
    values = {m: _per_problem(study, m, quantity, bench) for m in methods}
    parts, holds = [], True
    for (ra, a), (rb, b) in itertools.pairwise(zip(order, methods)):
        d, se, problems = _paired(values[a], values[b])
        part = f"{ra} − {rb} {d:+.3g} ± {Z95 * se:.2g}"
        if quantity == "accuracy":  # what treating every answer as independent would claim
            naive = math.hypot(*(_binomial_se(values[m].mean(), len(_answers(study, m, bench))) for m in (a, b)))
            part += f" (± {Z95 * naive:.2g} if answers were independent)"
        parts.append(part)
        holds &= _RELATIONS[relation](d, se)
    means = ", ".join(f"{role} {values[m].mean():.3g}" for role, m in zip(order, methods))
    return Measured(f"{means}; {'; '.join(parts)}",
                    f"{_QUANTITY[quantity]} per problem of {bench or 'every benchmark'} ({', '.join(methods)}), differences paired over {problems} problems, "
                    "95% half-width from the standard error over problems", holds=bool(holds))  # fmt: skip


@measurement
def power_rises_with(study: Study, artifact: str, parameter: str, benchmark: str | None = None) -> Measured:
    """Accuracy rises along the sweep of ``parameter`` (every other setting at the main one's): the
    least-squares slope of accuracy on the parameter, per problem and averaged over problems, is
    positive at the one-sided 5% level with its standard error over problems."""
    bench = _power_bench(study, benchmark)
    main = study.power["methods"][_power_method(study, artifact, "power")]
    sweep = {m: s[parameter] for m in study.power_methods(artifact)
             if (s := study.power["methods"][m])["kind"] == "power" and all(s[k] == v for k, v in main.items() if k != parameter)}  # fmt: skip
    if len(set(sweep.values())) < 3:
        raise NotComparable(f"{artifact} sweeps {parameter} over fewer than 3 values")
    acc = pd.DataFrame({m: _per_problem(study, m, "accuracy", bench) for m in sweep}).dropna()
    x = np.array([sweep[m] for m in acc.columns], dtype=float)
    xc = x - x.mean()
    slopes = acc.to_numpy() @ xc / (xc @ xc)
    slope, se = float(slopes.mean()), float(slopes.std(ddof=1) / math.sqrt(len(slopes)))
    points = ", ".join(f"{v:g}: {acc[m].mean():.1f}%" for m, v in sorted(sweep.items(), key=lambda kv: kv[1]))
    return Measured(f"{points}; slope {slope:+.3g} ± {Z95 * se:.2g} points per unit of {parameter}",
                    f"accuracy on {bench or 'every benchmark'} per problem along the {parameter} sweep of {artifact}, slope averaged over {len(slopes)} problems",
                    holds=bool(slope > Z95_ONE_SIDED * se))  # fmt: skip


@measurement
def power_cost(study: Study, artifact: str, method: str = "power", versus: str = "base") -> Measured:
    """Tokens drawn per answer by ``method`` over ``versus`` (power_study.accuracy_table's cost), with
    a 95% bootstrap interval over problems; holds when the whole interval lies above 1."""
    a, b = _power_method(study, artifact, method), _power_method(study, artifact, versus)
    table = power_study.accuracy_table({a: study.samples(a), b: study.samples(b)}, reference=b)
    both = pd.concat([_per_problem(study, m, "drawn", None) for m in (a, b)], axis=1).dropna().to_numpy()
    lo, hi = _bootstrap(lambda idx: both[idx, 0].mean() / both[idx, 1].mean(), list(range(len(both))))
    return Measured(f"{table.loc[a, f'cost vs {b}']:.3g}× ({table.loc[a, 'tokens drawn per answer']:.3g} vs {table.loc[b, 'tokens drawn per answer']:.3g} tokens drawn per answer), 95% interval [{lo:.3g}, {hi:.3g}]",
                    f"power_study.accuracy_table over every benchmark; bootstrap over {len(both)} problems", holds=bool(lo > 1))  # fmt: skip


@measurement
def power_accuracy_cell(study: Study, artifact: str, model: str, method: str, benchmark: str) -> Measured:
    """One cell of Karan & Du's Table 1 (%): single-shot accuracy (mean over all answers), within
    1.96·√2 binomial standard errors at the number of problems, as for Table 2's cells."""
    scale_model = study.model_roles.get(model)
    if study.power and study.power["model"] != scale_model:
        raise NotComparable(f"the power-sampling study samples {study.power['model']}, not {model}'s role {scale_model}")
    m = _power_method(study, artifact, method)
    bench = _power_bench(study, benchmark)
    value = 100 * float(power_study.accuracy_table({m: study.samples(m)}, reference=m).loc[m, bench])
    problems = study.power["problems"][bench]
    half = Z95 * math.sqrt(2) * _binomial_se(value, problems)
    return Measured(value, f"mean correctness of {m}'s {study.power['n']} answers to each of {problems} problems of {bench}",
                    interval=(value - half, value + half))  # fmt: skip


# ---- the paper's own consistency ------------------------------------------------------------


def table2_row_means(table2: dict) -> list[tuple[str, float, float]]:
    """(row, reported Avg., mean of the row's benchmark cells) for every row of the paper's Table 2."""
    out = []
    for model, rows in table2["rows"].items():
        for method_name, cells in rows.items():
            values = dict(zip(table2["columns"], cells))
            mean = float(np.mean([v for c, v in values.items() if c != "Avg."]))
            out.append((f"{model} {method_name}", values["Avg."], mean))
    return out


# ---- the audit ------------------------------------------------------------------------------


def expand_ledger(ledger: dict) -> list[dict]:
    """The ledger's claims, with Table 2 unfolded into one claim per cell."""
    claims = list(ledger["claims"])
    t2 = ledger["table2"]
    for model, rows in t2["rows"].items():
        for method_name, cells in rows.items():
            for column, value in zip(t2["columns"], cells):
                measure = {"fn": "benchmark_average", "artifact": "table02_benchmarks", "model": model, "method": method_name}
                if column != "Avg.":
                    measure = {**measure, "fn": "benchmark_cell", "benchmark": column}
                claims.append({
                    "id": f"table2/{model}/{method_name}/{column}", "claim": f"{model} {method_name}: {column} accuracy",
                    "source": "Table 2", "kind": "number", "paper": value, "unit": "%", "measure": measure,
                    "tolerance": t2["tolerance"],
                })  # fmt: skip
    return claims


def judge(claim: dict, study: Study) -> dict:
    """One row of the audit: the claim, the paper's value, the measurement and the verdict with its reason."""
    row = {"id": claim["id"], "claim": claim["claim"], "source": claim["source"], "kind": claim["kind"],
           "paper": claim.get("paper"), "unit": claim.get("unit", ""), "measured": None, "how": "", "tolerance": "", "verdict": "", "why": ""}  # fmt: skip
    tol = claim.get("tolerance", {})
    try:
        m = MEASUREMENTS[claim["measure"]["fn"]](study, **{k: v for k, v in claim["measure"].items() if k != "fn"})
    except NotComparable as err:
        return {**row, "verdict": NOT_COMPARABLE, "why": str(err)}
    row.update(measured=m.value, how=m.how)
    note = f" (note: {claim['paper_note']})" if claim.get("paper_note") and claim.get("paper") is not None else ""
    if claim["kind"] == "qualitative":
        row["tolerance"] = tol.get("why", "")
        return {**row, "verdict": REPRODUCED if m.holds else NOT_REPRODUCED, "why": f"test: {claim['test']}{note}"}
    interval, rule = m.interval, ""
    if "factor" in tol:  # the ledger's own rule replaces any interval the measurement brings
        interval, rule = factor_interval(float(m.value), tol["factor"]), f" (within a factor {tol['factor']:g} of the measured value, same sign)"
    if interval is not None:
        row["tolerance"] = f"[{interval[0]:.3g}, {interval[1]:.3g}]{rule}: {tol.get('why', '')}"
    if claim.get("paper") is None:
        return {**row, "verdict": NOT_COMPARABLE, "why": claim.get("paper_note", "the paper's value is not in the project's copy of the paper")}
    if study.scale != "paper":
        return {**row, "verdict": NOT_COMPARABLE, "why": f"numbers are compared at paper scale; this is the {study.scale} scale's analogue{note}"}
    if interval is None:
        raise ValueError(f"claim {claim['id']!r}: {claim['measure']['fn']} gives no acceptance interval and the ledger no tolerance.factor")
    lo, hi = interval
    inside = lo <= claim["paper"] <= hi
    return {**row, "verdict": REPRODUCED if inside else NOT_REPRODUCED,
            "why": f"paper value {'inside' if inside else 'outside'} the acceptance interval{note}"}  # fmt: skip


def factor_interval(measured: float, factor: float) -> tuple[float, float]:
    """The paper values a measurement accepts within a factor: measured/factor to measured·factor (ordered,
    so a negative measurement accepts only negative values; zero accepts none but zero). The paper value is
    inside exactly when measured/paper lies in [1/factor, factor]: the rule is symmetric in the two."""
    lo, hi = sorted((measured / factor, measured * factor))
    return lo, hi


def consistency_rows(ledger: dict) -> list[dict]:
    """Checks of the paper against itself, which need no run (Table 2's Avg. column)."""
    rows = []
    means = table2_row_means(ledger["table2"])
    worst = max(means, key=lambda r: abs(r[1] - r[2]))
    bad = [r for r in means if abs(r[1] - r[2]) > 0.05 + 1e-9]
    rows.append({
        "id": "table2/avg-is-mean", "claim": "Table 2's Avg. column is the mean of the seven benchmark columns",
        "source": "Table 2", "kind": "consistency", "paper": f"{len(bad)} of {len(means)} rows differ",
        "unit": "", "measured": f"largest gap: {worst[0]} reports {worst[1]}, its cells average {worst[2]:.2f}",
        "how": "unweighted mean of each row's benchmark cells, against the reported Avg.",
        "tolerance": "0.05 points (rounding to one decimal)", "verdict": REPRODUCED if not bad else NOT_REPRODUCED,
        "why": "the reported average is not the plain mean of the cells; its weighting is not stated" if bad else "",
    })  # fmt: skip
    return rows


def check_ledger(ledger: dict) -> None:
    """Every claim names a known measurement and artifact, and ids are unique (after the schema)."""
    from .artifacts import ARTIFACTS

    seen = set()
    for claim in ledger["claims"]:
        where = f"claims.yaml claim {claim['id']!r}"
        if claim["id"] in seen:
            raise ValueError(f"{where}: duplicate id")
        seen.add(claim["id"])
        if claim["measure"]["fn"] not in MEASUREMENTS:
            raise ValueError(f"{where}: unknown measure.fn {claim['measure']['fn']!r}; known are {sorted(MEASUREMENTS)}")
        for name in (claim["measure"]["artifact"], *claim["measure"].get("also", ())):
            if name not in (*ARTIFACTS, *POWER_ARTIFACTS):
                raise ValueError(f"{where}: unknown artifact {name!r}; known are {sorted((*ARTIFACTS, *POWER_ARTIFACTS))}")
        if "factor" in claim.get("tolerance", {}) and claim["kind"] != "number":
            raise ValueError(f"{where}: tolerance.factor applies to number claims only")
    widths = {len(cells) for rows in ledger["table2"]["rows"].values() for cells in rows.values()}
    if widths != {len(ledger["table2"]["columns"])}:
        raise ValueError(f"claims.yaml table2: rows must have one value per column ({len(ledger['table2']['columns'])})")


def run_audit(ledger: dict, study: Study) -> pd.DataFrame:
    check_ledger(ledger)
    rows = [judge(claim, study) for claim in expand_ledger(ledger)] + consistency_rows(ledger)
    return pd.DataFrame(rows)


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{round(value, 6) + 0.0:.3g}"  # no -8e-15 for a zero
    return str(value)


def verdict_counts(audit: pd.DataFrame) -> dict[str, int]:
    return {v: int((audit["verdict"] == v).sum()) for v in (REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE)}


def to_markdown(audit: pd.DataFrame, scale: str) -> str:
    counts = verdict_counts(audit)
    lines = [f"# Audit of the paper's claims ({scale} scale)", "",
             ", ".join(f"**{n}** {v}" for v, n in counts.items()) + f" — {len(audit)} entries from claims.yaml.", "",
             "| claim | source | paper | measured | tolerance | verdict |", "|---|---|---|---|---|---|"]  # fmt: skip
    for _, r in audit.iterrows():
        cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
        verdict = r["verdict"] + (f" ({r['why']})" if r["why"] else "")
        measured = _fmt(r["measured"]) + (f" — {r['how']}" if r["how"] else "")
        paper = _fmt(r["paper"]) + (r["unit"] if r["paper"] is not None and r["unit"] else "")
        lines.append(f"| {cell(r['claim'])} | {cell(r['source'])} | {cell(paper)} | {cell(measured)} | {cell(r['tolerance'])} | {cell(verdict)} |")
    return "\n".join(lines) + "\n"


def to_html(audit: pd.DataFrame, scale: str) -> str:
    counts = verdict_counts(audit)
    colour = {REPRODUCED: "#d8f0d8", NOT_REPRODUCED: "#f6d5d5", NOT_COMPARABLE: "#eeeeee"}
    body = []
    for _, r in audit.iterrows():
        cells = [r["claim"], r["source"], _fmt(r["paper"]) + (r["unit"] if r["paper"] is not None else ""),
                 _fmt(r["measured"]), r["how"], r["tolerance"], r["verdict"], r["why"]]  # fmt: skip
        tds = "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
        body.append(f'<tr style="background:{colour.get(r["verdict"], "white")}">{tds}</tr>')
    head = "".join(f"<th>{h}</th>" for h in ("claim", "source", "paper", "measured", "how measured", "tolerance", "verdict", "why"))
    summary = ", ".join(f"{n} {v}" for v, n in counts.items())
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Audit ({scale} scale)</title>"
            "<style>body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
            "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top;text-align:left}</style></head><body>"
            f"<h1>Audit of the paper's claims ({scale} scale)</h1><p>{summary} — {len(audit)} entries from claims.yaml.</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></body></html>\n")  # fmt: skip
