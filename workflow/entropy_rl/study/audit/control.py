"""Measurements of Section 4: what the entropy-control methods (entropy loss, reference KL, Clip-Cov,
KL-Cov, clip-higher) do to entropy, against the same model's GRPO run."""

from __future__ import annotations

import itertools
import math

import numpy as np

from ...core import metric_columns
from ...core.spec import replicate_of
from .. import analysis
from .data import NotComparable, Study
from .registry import Measured, measurement


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


def _final_entropy(study: Study, run: str) -> float:
    m = study.metrics(run)
    return analysis.final_value(m, "entropy", last=max(3, len(m) // 10))


@measurement
def entropy_rises_with(study: Study, artifact: str, parameter: str, method_name: str) -> Measured:
    """Final entropy (mean of the last 10% of steps) strictly increases with a treatment parameter;
    the GRPO baseline enters at 0 when the parameter is a coefficient of an added loss term."""
    runs = study.runs(artifact)
    points = [
        (getattr(study.specs[r].loss, parameter), _final_entropy(study, r))
        for r in runs
        if study.method(r) == method_name
    ]
    if parameter in ("entropy_coeff", "kl_loss_coef"):
        points.append((0.0, _final_entropy(study, study.baseline(runs))))
    if len(points) < 2:
        raise NotComparable(f"{artifact} has fewer than 2 {method_name} settings")
    points.sort()
    holds = all(b[1] > a[1] for a, b in itertools.pairwise(points))
    return Measured(
        ", ".join(f"{p:g}: {h:.3f}" for p, h in points),
        f"final entropy (last 10% of steps) per {parameter}, runs of {artifact}",
        holds=bool(holds),
        effects={f"H({b[0]:g}) - H({a[0]:g})": b[1] - a[1] for a, b in itertools.pairwise(points)},
    )


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
    treated = sorted((getattr(study.specs[r].loss, parameter), r) for r in runs if study.method(r) == method_name)
    if len({c for c, _ in treated}) < 2:
        raise NotComparable(f"{artifact} has fewer than 2 {method_name} coefficients")
    base = study.baseline(runs)
    h0_start, h0_end = _start_entropy(study, base), _final_entropy(study, base)
    (c_small, small), (c_large, large) = treated[0], treated[-1]
    h_small = _final_entropy(study, small)
    h_large_start, h_large = _start_entropy(study, large), _final_entropy(study, large)
    width = band * abs(h0_start - h0_end)
    barely = abs(h_small - h0_end) <= width
    explodes = h_large > h_large_start and h_large > explode * h0_end
    value = (
        f"GRPO {h0_start:.3g} → {h0_end:.3g}; smallest {parameter} {c_small:g} ends {h_small:.3g} "
        f"({h_small - h0_end:+.3g}, band ±{width:.3g}: {'barely moves' if barely else 'moves'}); "
        f"largest {c_large:g} {h_large_start:.3g} → {h_large:.3g} (explodes above max(start, {explode:g}× GRPO's end = "
        f"{explode * h0_end:.3g}): {'yes' if explodes else 'no'}); all: "
        + ", ".join(f"{c:g}: {_final_entropy(study, r):.3g}" for c, r in treated)
    )
    # |d| <= band as two signed effects, band - d and band + d: each is linear in the seeds' values, so its mean over
    # seeds is unbiased, where the mean of band - |d| drifts below zero with noise alone (E|d| > |E d|).
    drop = band * (h0_start - h0_end)  # signed: the band is a share of the entropy GRPO consumed
    effects = {
        "band - (smallest's end - GRPO's end)": drop - (h_small - h0_end),
        "band + (smallest's end - GRPO's end)": drop + (h_small - h0_end),
        "largest's end - its start": h_large - h_large_start,
        f"largest's end - {explode:g}x GRPO's end": h_large - explode * h0_end,
    }
    return Measured(
        value,
        f"entropy, means over the first and last 10% of steps, {method_name} runs of {artifact} by rank of {parameter}, against its GRPO run",
        holds=bool(barely and explodes),
        effects=effects,
    )


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

    parts, holds, effects = [], True, {}
    for r in picked:
        base = study.baseline(runs, study.specs[r].model)
        h, h0 = late(r), late(base)
        ratio = h / h0 if h0 > 0 else math.inf
        parts.append(f"{r} {h:.3g} vs {base} {h0:.3g}: {ratio:.3g}×")
        holds &= ratio >= factor
        effects[f"log10({study.name(r)} / GRPO / {factor:g})"] = math.log10(ratio / factor) if h > 0 else math.nan
    return Measured(
        "; ".join(parts),
        f"mean entropy over the last {tail:.3g} of the steps, {method} over the same model's GRPO run, runs of {artifact}",
        holds=bool(holds),
        effects=effects,
    )


@measurement
def clip_cov_bounds(study: Study, artifact: str, bound: str, exceeds: float, also: list[str] = ()) -> Measured:
    """Every Clip-Cov run's covariance bound (``bound`` of its spec, e.g. clip_cov_lb) over the mean over
    steps of its batch-level token covariance (``cov_all``, Eq. 10) exceeds ``exceeds``; a mean that
    is not positive leaves the ratio undefined (not reproduced)."""
    runs = [r for r in _artifact_runs(study, artifact, also) if study.method(r) == "Clip-Cov"]
    if not runs:
        raise NotComparable(f"{', '.join((artifact, *also))} have no Clip-Cov run")
    parts, holds, effects = [], True, {}
    for r in runs:
        lb = float(getattr(study.specs[r].loss, bound))
        mean, steps = _mean_column(study, r, metric_columns.TOKEN_COV)
        if mean > 0:
            parts.append(f"{r}: {bound} {lb:g} / mean cov_all {mean:.3g} = {lb / mean:.3g}×")
            holds &= lb / mean > exceeds
        else:
            parts.append(f"{r}: mean cov_all {mean:.3g} over {steps} steps, ratio undefined")
            holds = False
        effects[f"log10({study.name(r)}: {bound} / cov / {exceeds:g})"] = (
            math.log10(lb / mean / exceeds) if mean > 0 else math.nan
        )
    return Measured(
        "; ".join(parts),
        f"{bound} from each Clip-Cov run's spec over its mean token covariance (Eq. 10, all tokens of a batch) over steps",
        holds=bool(holds),
        effects=effects,
    )


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
    return Measured(
        float(np.mean(steps)),
        f"mean of cliphigher_cov over the {len(steps)} steps where it is defined, pooled over {detail}",
    )


@measurement
def touched_fraction(study: Study, artifact: str, low: float, high: float, also: list[str] = ()) -> Measured:
    """Every Clip-Cov and KL-Cov run's mean over steps of ``cov_touched_frac`` (the share of response
    tokens detached or penalised) lies in [``low``, ``high``]."""
    runs = [r for r in _artifact_runs(study, artifact, also) if study.method(r) in ("Clip-Cov", "KL-Cov")]
    if not runs:
        raise NotComparable(f"{', '.join((artifact, *also))} have no Clip-Cov or KL-Cov run")
    parts, holds, effects = [], True, {}
    for r in runs:
        mean, _ = _mean_column(study, r, "cov_touched_frac")
        parts.append(f"{r} ({study.method(r)}) {mean:.3g}")
        holds &= low <= mean <= high
        effects[f"{study.name(r)} - {low:g}"] = mean - low
        effects[f"{high:g} - {study.name(r)}"] = high - mean
    return Measured(
        "; ".join(parts),
        f"mean over steps of cov_touched_frac, Clip-Cov and KL-Cov runs of {', '.join((artifact, *also))}, against [{low:g}, {high:g}]",
        holds=bool(holds),
        effects=effects,
    )


@measurement
def treatment_entropy_above_baseline(study: Study, artifact: str, methods: list[str]) -> Measured:
    """Every run of ``methods`` ends with more entropy than the GRPO run of the same model."""
    runs = study.runs(artifact)
    parts, holds, effects = [], True, {}
    for r in runs:
        if study.method(r) in methods:
            base = study.baseline(runs, study.specs[r].model)
            h, h0 = _final_entropy(study, r), _final_entropy(study, base)
            parts.append(f"{study.method(r)} {h:.3f} vs {h0:.3f}")
            holds &= h > h0
            effects[f"{study.name(r)} - GRPO"] = h - h0
    if not parts:
        raise NotComparable(f"{artifact} has no {methods} runs")
    return Measured(
        "; ".join(parts),
        f"final entropy (last 10% of steps) against the same model's GRPO run, runs of {artifact}",
        holds=bool(holds),
        effects=effects,
    )


@measurement
def kl_cov_stabler(study: Study, artifact: str) -> Measured:
    """Per model, KL-Cov's entropy curves are smoother (late step-to-step changes, averaged over its
    settings) than Clip-Cov's."""
    by_model: dict[str, dict[str, list[float]]] = {}
    for r in study.runs(artifact):
        if study.method(r) in ("Clip-Cov", "KL-Cov"):
            by_model.setdefault(study.specs[r].model, {}).setdefault(study.method(r), []).append(
                analysis.entropy_stability(study.metrics(r))
            )
    pairs = {m: {k: float(np.mean(v)) for k, v in d.items()} for m, d in by_model.items() if len(d) == 2}
    if not pairs:
        raise NotComparable(f"{artifact} has no model with both Clip-Cov and KL-Cov")
    value = "; ".join(f"{m}: KL-Cov {v['KL-Cov']:.4f} vs Clip-Cov {v['Clip-Cov']:.4f}" for m, v in pairs.items())
    return Measured(
        value,
        f"analysis.entropy_stability (std of entropy changes, second half), mean per method, runs of {artifact}",
        holds=all(v["KL-Cov"] < v["Clip-Cov"] for v in pairs.values()),
        effects={f"{replicate_of(m)[0]}: Clip-Cov - KL-Cov": v["Clip-Cov"] - v["KL-Cov"] for m, v in pairs.items()},
    )


@measurement
def response_length_grows(study: Study, artifact: str, methods: list[str]) -> Measured:
    runs = [r for r in study.runs(artifact) if study.method(r) in methods]
    if not runs:
        raise NotComparable(f"{artifact} has no {methods} runs")
    parts, holds, effects = [], True, {}
    for r in runs:
        m = study.metrics(r).sort_values("step")
        k = max(3, len(m) // 10)
        start, end = float(m["response_length"].head(k).mean()), float(m["response_length"].tail(k).mean())
        parts.append(f"{r} {start:.0f}→{end:.0f}")
        holds &= end > start
        effects[f"{study.name(r)}: end - start"] = end - start
    return Measured(
        "; ".join(parts), "mean response length, first vs last 10% of steps", holds=bool(holds), effects=effects
    )
