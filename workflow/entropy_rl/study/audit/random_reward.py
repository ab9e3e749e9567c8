"""Measurements of the random-reward control (issue 42), this workflow's own claims: does entropy fall, and how fast,
under a reward that ignores the answer; does accuracy move; and is the law's fit still that of a trade?

Each compares a run whose method is "Random reward" (``data.method``) with the GRPO run of the same model among its
artifact's runs, over the steps both have. Start and end are means over the first and last 10% of those steps (at
least 3), as the other entropy claims read them (control.py).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import analysis
from .data import NotComparable, Study
from .registry import Measured, measurement
from .relations import Effect

RANDOM = "Random reward"
# Validation points averaged at each end of a run for the accuracy change: one point is noisy.
ENDS = 3


def _pair(study: Study, artifact: str) -> tuple[str, str]:
    """The artifact's random-reward run and the same model's GRPO run (its true-reward twin)."""
    runs = study.runs(artifact)
    random = [r for r in runs if study.method(r) == RANDOM]
    if len(random) != 1:
        raise NotComparable(f"expected one random-reward run among {runs}, found {random}")
    return random[0], study.baseline(runs, study.specs[random[0]].model)


def _shared(study: Study, runs: tuple[str, str]) -> list[pd.DataFrame]:
    """Each run's metrics over the steps both runs reached."""
    last = min(int(study.metrics(r)["step"].max()) for r in runs)
    return [study.metrics(r).loc[lambda m: m["step"] <= last].sort_values("step") for r in runs]


def _entropy_ends(metrics: pd.DataFrame) -> tuple[float, float]:
    entropy = metrics["entropy"].dropna()
    k = max(3, len(entropy) // 10)
    return float(entropy.head(k).mean()), float(entropy.tail(k).mean())


@measurement
def random_entropy_falls(study: Study, artifact: str) -> Measured:
    """The random-reward run ends with less entropy than it starts with."""
    random, base = _pair(study, artifact)
    start, end = _entropy_ends(_shared(study, (random, base))[0])
    return Measured(
        f"{random}: {start:.3g} → {end:.3g} nats ({end - start:+.3g})",
        f"mean entropy over the first and last 10% of the steps {random} shares with {base}",
        holds=end < start,
        effects={f"{study.name(random)}: start - end": start - end},
    )


@measurement
def random_entropy_drop_ratio(study: Study, artifact: str) -> Measured:
    """The entropy the random-reward run loses, over what its true-reward twin loses over the same steps, is below 1:
    a coin-flip reward costs less entropy than the true one. A twin that loses none leaves the ratio undefined."""
    random, base = _pair(study, artifact)
    (s_r, e_r), (s_t, e_t) = (_entropy_ends(m) for m in _shared(study, (random, base)))
    drop_r, drop_t = s_r - e_r, s_t - e_t
    ratio = drop_r / drop_t if drop_t > 0 else math.nan
    return Measured(
        f"drop {drop_r:.3g} (random) / {drop_t:.3g} (true) = {ratio:.3g}",
        f"entropy lost (mean of the first minus the last 10% of the shared steps), {random} over {base}",
        holds=bool(ratio < 1),
        effects={"1 - random/true entropy drop": 1 - ratio},
    )


def _accuracy_ends(study: Study, metrics: pd.DataFrame) -> tuple[float, float, float]:
    """Mean validation accuracy of the first and the last ``ENDS`` validation points, and the binomial standard error
    of their difference (each point a macro-average over benchmarks of ``val_samples`` answers each)."""
    pts = metrics.loc[metrics["val_acc"].notna()].sort_values("step")
    benches = [b for b in study.val_samples if f"val_acc/{b}" in pts]
    if len(pts) < 2 * ENDS or not benches:
        raise NotComparable(f"fewer than {2 * ENDS} validation points with per-benchmark accuracy")
    var = (
        sum(pts[f"val_acc/{b}"] * (1 - pts[f"val_acc/{b}"]) / study.val_samples[b] for b in benches) / len(benches) ** 2
    )
    first, last = pts.head(ENDS), pts.tail(ENDS)
    se = math.sqrt(var.head(ENDS).sum() + var.tail(ENDS).sum()) / ENDS
    return float(first["val_acc"].mean()), float(last["val_acc"].mean()), se


@measurement(relation="within")
def random_accuracy_flat(study: Study, artifact: str) -> Measured:
    """Validation accuracy under the random reward does not move: the change from the first to the last validation
    points lies within the claim's margin (equivalence, TOST), its error binomial on one seed, the seeds' spread
    over several."""
    random, base = _pair(study, artifact)
    first, last, se = _accuracy_ends(study, _shared(study, (random, base))[0])
    change = last - first
    return Measured(
        f"{random}: {100 * first:.1f}% → {100 * last:.1f}% ({100 * change:+.1f} points, binomial s.e. {100 * se:.1f})",
        f"mean validation accuracy of the first and last {ENDS} validation points of {random}",
        holds=abs(change) <= 1.96 * se,
        effects={f"{study.name(random)}: accuracy change": Effect(change, se)},
    )


@measurement
def random_law_weaker(study: Study, artifact: str) -> Measured:
    """R = -a exp(H) + b fitted to the random-reward run has a smaller a and a lower R² than fitted to its true-reward
    twin: its entropy buys less accuracy, and explains less of it. A fit that cannot be made (entropy or accuracy
    constant) leaves the comparison undefined."""
    runs = _pair(study, artifact)
    fits = {}
    for run, metrics in zip(runs, _shared(study, runs)):
        try:
            fits[run] = analysis.fit_run(metrics)
        except ValueError:
            fits[run] = {"a": math.nan, "b": math.nan, "r2": math.nan}
    (random, base), (fr, ft) = runs, (fits[runs[0]], fits[runs[1]])
    effects = {"a(true) - a(random)": ft["a"] - fr["a"], "R²(true) - R²(random)": ft["r2"] - fr["r2"]}
    value = "; ".join(f"{r}: a {f['a']:.3g}, b {f['b']:.3g}, R² {f['r2']:.2f}" for r, f in fits.items())
    return Measured(
        value,
        f"analysis.fit_run on each run's validation points over the steps {random} shares with {base}",
        holds=bool(np.all(np.array(list(effects.values())) > 0)),
        effects=effects,
    )
