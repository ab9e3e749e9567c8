"""How often each verdict of the audit is wrong, measured: studies simulated with a known truth, judged by the
audit's own code (issue 66).

    python benchmarks/audit_calibration.py                       # every case, 4,000 studies each, a table
    python benchmarks/audit_calibration.py --draws 400 --csv calibration.csv

Every kind of test the audit runs is here, each through the audit's own functions (not a copy): effects over
seeds (seeds.combine, relations.decide), binomial validation accuracy within a run (random_reward._accuracy_ends),
differences paired over problems (power._paired), correlations and means of autocorrelated step series
(covariance.correlation_effect, covariance.series_mean), the law fit's χ² (entropy_law.law_fits_within_noise on
a simulated study), numbers against a paper value (verdicts.number_verdict), the size trend with shared base
models (entropy_law.size_trend) and Welch differences (entropy_law._difference).

The truth is put on a claim's line (the claim false by a hair, and its opposite too), inside it and outside it.
Each row is one truth and one verdict that is wrong for it: ``false_rate`` is how often the audit gave that verdict,
``nominal`` the rate the audit states for it (its one-sided level, 5%), ``power`` how often it gave the right
decisive verdict where the truth is off the line. ``mc_se`` is the Monte Carlo standard error of a rate at the
nominal level; the suite's fast run (tests/study/audit/test_audit_calibration.py) fails when a false rate exceeds its
nominal level by more than 3 of them. A row with no nominal level reports, and asserts nothing (a wrong shape of
the law, where no line is defined).

This module is the simulation; benchmarks/audit_calibration.py runs it in full and the suite's test a fast run of it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from entropy_rl.study.audit import covariance, entropy_law, power, random_reward, seeds, verdicts
from entropy_rl.study.audit.data import Study
from entropy_rl.study.audit.registry import Measured
from entropy_rl.study.audit.relations import CONTRADICTED, INCONCLUSIVE, LEVEL, REPRODUCED, Effect, decide

from . import a_run

R, C = REPRODUCED, CONTRADICTED


@dataclass(frozen=True)
class Truth:
    label: str  # "line", "inside", "outside", or a description
    value: float
    wrong: tuple[str, ...]  # the verdicts that are wrong for this truth, one row each
    right: str | None = None  # the decisive verdict that is right (its rate is the power)
    nominal: float = LEVEL  # the stated rate of each wrong verdict (NaN: none stated)


@dataclass(frozen=True)
class Case:
    name: str
    relation: str
    seeds: int
    effects: int
    truths: tuple[Truth, ...]
    judge: Callable[[np.random.Generator, float], str]  # one simulated study at a truth -> the audit's verdict


def _verdict(effects: dict, relation: str, margin: float | None) -> str:
    return decide(effects, relation, margin, plan=False).verdict


def _combine(per_seed: list[dict[str, float | Effect]]) -> dict[str, Effect]:
    """Effects measured once per seed, combined as the audit combines them."""
    return seeds.combine([Measured("v", "h", effects=e) for e in per_seed]).effects


def directional_truths(margin: float, far: float, relation: str) -> tuple[Truth, ...]:
    """Truths for a relation whose reproduce and contradict lines coincide (above: 0; not_below: −δ)."""
    line = {"above": 0.0, "below": 0.0, "not_below": -margin, "not_above": margin}[relation]
    sign = {"above": 1, "below": -1, "not_below": 1, "not_above": -1}[relation]
    return (
        Truth("line", line, (R, C)),
        Truth("inside", line + sign * far, (C,), R),
        Truth("outside", line - sign * far, (R,), C),
    )


def band_truths(margin: float, far: float, relation: str) -> tuple[Truth, ...]:
    """Truths for within (inside: 0) and differs (inside: beyond the margin), the line at the margin."""
    if relation == "within":
        return Truth("line", margin, (R, C)), Truth("inside", 0.0, (C,), R), Truth("outside", margin + far, (R,), C)
    return Truth("line", margin, (R, C)), Truth("inside", margin + far, (C,), R), Truth("outside", 0.0, (R,), C)


# ---- effects over seeds ------------------------------------------------------------------------------------------


def over_seeds_case(relation: str, k: int, n_effects: int, margin: float | None = None) -> Case:
    """k seeds, each effect's per-seed value N(θ, 1), every effect at the truth (on the line: all of them, the
    worst case for a union over effects)."""

    def judge(rng, theta):
        per_seed = [{f"e{j}": float(rng.normal(theta, 1.0)) for j in range(n_effects)} for _ in range(k)]
        effects = _combine(per_seed) if k > 1 else {n: Effect(v) for n, v in per_seed[0].items()}
        return _verdict(effects, relation, margin)

    far = 2.5 if k < 5 else 1.5
    truths = (
        band_truths(margin, far, relation)
        if relation in ("within", "differs")
        else directional_truths(margin or 0.0, far, relation)
    )
    return Case(f"over seeds: {relation}", relation, k, n_effects, truths, judge)


def intersection_worst_case(k: int) -> Case:
    """An intersection–union test's worst case: one effect on the line, the others far inside the claim."""

    def judge(rng, theta):
        per_seed = [
            {"e0": float(rng.normal(theta, 1.0)), **{f"e{j}": float(rng.normal(20.0, 1.0)) for j in (1, 2, 3)}}
            for _ in range(k)
        ]
        return _verdict(_combine(per_seed), "above", None)

    return Case(
        "over seeds: above, one effect on the line, three far inside", "above", k, 4, (Truth("line", 0.0, (R,)),), judge
    )


# ---- noise within one run ----------------------------------------------------------------------------------------


def binomial_case(k: int, margin: float = 0.05, n_val: int = 192) -> Case:
    """random_accuracy_flat's effect: the change of validation accuracy from the first 3 to the last 3 of 7
    validation points, two benchmarks of ``n_val`` answers each, binomial; its noise binomial on one seed, the
    seeds' spread over several. Claimed within ±margin."""
    study = type("S", (), {"val_samples": {"x": n_val, "y": n_val}})()
    steps = np.arange(0, 35, 5)

    def one_seed(rng, theta):
        p = np.where(steps < 20, 0.4, 0.4 + theta)
        acc = {f"val_acc/{b}": rng.binomial(n_val, p) / n_val for b in ("x", "y")}
        frame = pd.DataFrame({"step": steps, **acc})
        frame["val_acc"] = frame[["val_acc/x", "val_acc/y"]].mean(axis=1)
        first, last, se = random_reward._accuracy_ends(study, frame)
        return Effect(last - first, se)

    def judge(rng, theta):
        if k == 1:
            return _verdict({"change": one_seed(rng, theta)}, "within", margin)
        return _verdict(_combine([{"change": one_seed(rng, theta).estimate} for _ in range(k)]), "within", margin)

    return Case("binomial within a run: accuracy change", "within", k, 1, band_truths(margin, 0.12, "within"), judge)


def paired_problems_case(margin: float = 3.4, problems: int = 100, answers: int = 4) -> Case:
    """power_compare's effect: two methods' accuracy (%) per problem, paired over problems (power._paired), the
    problems' difficulties shared; claimed not below −margin (power/matches-grpo)."""

    def judge(rng, theta):
        base = rng.beta(2, 2, problems)
        a = pd.Series(100 * rng.binomial(answers, np.clip(base + theta / 100, 0, 1)) / answers)
        b = pd.Series(100 * rng.binomial(answers, base) / answers)
        d, se, n = power._paired(a, b)
        return _verdict({"a − b": power._paired_effect(d, se, n)}, "not_below", margin)

    return Case(
        "paired over problems: accuracy difference",
        "not_below",
        1,
        1,
        directional_truths(margin, 8.0, "not_below"),
        judge,
    )


def _ar1(rng, n: int, phi: float) -> np.ndarray:
    x = np.empty(n)
    x[0] = rng.normal() / math.sqrt(1 - phi**2)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + rng.normal()
    return x


def correlation_case(steps: int = 30, phi: float = 0.8) -> Case:
    """covariance_tracks_entropy's effect: the correlation of two AR(1) step series (φ = ``phi``) on Fisher's z,
    true correlation θ; claimed above 0."""

    def judge(rng, theta):
        x, e = _ar1(rng, steps, phi), _ar1(rng, steps, phi)
        y = theta * x + math.sqrt(1 - theta**2) * e
        return _verdict({"z": covariance.correlation_effect(x, y)[0]}, "above", None)

    truths = (Truth("line", 0.0, (R, C)), Truth("inside", 0.8, (C,), R), Truth("outside", -0.8, (R,), C))
    return Case(f"Fisher z over {steps} AR(1) steps (φ {phi:g})", "above", 1, 1, truths, judge)


def series_mean_case(steps: int = 30, phi: float = 0.7) -> Case:
    """covariance_by_difficulty's effect: the mean of an AR(1) step series (paired steps), true mean θ (in units of
    the series' innovations); claimed above 0."""

    def judge(rng, theta):
        return _verdict({"mean": covariance.series_mean(theta + _ar1(rng, steps, phi))}, "above", None)

    truths = (Truth("line", 0.0, (R, C)), Truth("inside", 2.5, (C,), R), Truth("outside", -2.5, (R,), C))
    return Case(f"mean of {steps} AR(1) steps (φ {phi:g})", "above", 1, 1, truths, judge)


# ---- the law fit -------------------------------------------------------------------------------------------------

VAL_STEPS = tuple(range(0, 31, 5))  # the mini study's validation points: 30 steps, every 5
DENSE_STEPS = (*range(10), *range(10, 31, 5))  # every step for the first 10, then every 5


def _law_study(curves: list[pd.DataFrame], n_val: int, benches: tuple[str, ...] = ("x", "y")) -> Study:
    names = ["r", *(f"r@r{k}" for k in range(1, len(curves)))]
    specs = {
        n: a_run(id=n, model="m", **({"replicate_of": "r", "replicate": k} if k else {})) for k, n in enumerate(names)
    }
    cache = {("metrics", n): c for n, c in zip(names, curves)}
    return Study(
        scale="mini",
        artifacts={"fig": ["r"]},
        specs=specs,
        metrics_paths={},
        summary_paths={},
        model_paths={},
        val_samples=dict.fromkeys(benches, n_val),
        bench_sizes={},
        bench_roles={},
        model_roles={},
        fit_steps=10,
        _cache=cache,
    )


SHAPES = {  # accuracy along the run, each through the law's values at H = 0.25 and H = 0.05
    "law": "the law R = −exp(H) + 1.6",
    "line": "a line in H",
    "exp(-H)": "an exponential in −H",
    "step": "accuracy rising with the step, not the entropy",
}


def _shape(shape: str, h: np.ndarray, t: np.ndarray) -> np.ndarray:
    lo, hi = -math.exp(0.25) + 1.6, -math.exp(0.05) + 1.6  # accuracy at the start (H 0.25) and at the end (H 0.05)
    if shape == "law":
        return -np.exp(h) + 1.6
    if shape == "line":
        return lo + (hi - lo) * (0.25 - h) / 0.2
    if shape == "exp(-H)":
        return lo + (hi - lo) * (np.exp(-h) - math.exp(-0.25)) / (math.exp(-0.05) - math.exp(-0.25))
    return lo + (hi - lo) * t / 30


def law_curve(rng, rho: float, steps=VAL_STEPS, n_val: int = 192, shape: str = "law", tau: float = 1.5) -> pd.DataFrame:
    """Validation points along an entropy collapse H(t) = 0.05 + 0.2·exp(−t/tau), the mini study's range; accuracy
    of the given shape (SHAPES) plus normal noise of ρ times the binomial variance of ``n_val`` answers on each of
    two benchmarks."""
    t = np.asarray(steps, dtype=float)
    h = 0.05 + 0.2 * np.exp(-t / tau)
    r = _shape(shape, h, t)
    var = r * (1 - r) / (2 * n_val)  # the macro-average of two benchmarks' binomial noise
    noisy = r + rng.normal(0, np.sqrt(rho * var))
    return pd.DataFrame({"step": t.astype(int), "entropy": h, "val_acc": noisy, "val_acc/x": noisy, "val_acc/y": noisy})


def law_case(k: int, margin: float = 1.0) -> Case:
    """law_fits_within_noise on a simulated study: k seeds of one run, each a curve from the law plus noise with
    variance ρ times the binomial noise the audit assumes; claimed ρ − 1 below the margin."""

    def judge(rng, rho):
        m = entropy_law.law_fits_within_noise(_law_study([law_curve(rng, rho) for _ in range(k)], 192), "fig")
        return _verdict(m.effects, "not_above", margin)

    truths = (
        Truth("line (ρ = 2)", 1 + margin, (R, C)),
        Truth("inside (ρ = 1)", 1.0, (C,), R),
        Truth("outside (ρ = 6)", 6.0, (R,), C),
    )
    return Case("law fit: χ² of the residuals", "not_above", k, 1, truths, judge)


def law_fixed_problems_case(problems: int = 32, answers: int = 4, spread: float = 0.3) -> Case:
    """The lean the audit states for the law fit, measured: validation answers the same ``problems`` at every step
    (the mini default: 32 a benchmark, 4 answers each), each problem's accuracy offset from the curve by a fixed
    amount (uniform within ±``spread``), so the step-to-step noise is the answers' within-problem variance, smaller
    than the binomial noise the audit assumes. The truth is on the line against that true noise (a misfit adding as
    much variance again); the row reports how often the law is nonetheless reproduced. No nominal level: the lean
    is stated (docs/audit.md), not corrected."""

    def curve(rng, offsets):
        t = np.asarray(VAL_STEPS, dtype=float)
        h = 0.05 + 0.2 * np.exp(-t / 1.5)
        r = _shape("law", h, t)
        p = np.clip(r[:, None] + offsets[None, :], 0.02, 0.98)  # steps × problems
        acc = rng.binomial(answers, p).mean(axis=1) / answers
        true_var = (p * (1 - p)).sum(axis=1) / (problems**2 * answers)
        acc = acc + rng.normal(0, np.sqrt(true_var))  # the misfit: as much variance again as the true noise
        return pd.DataFrame({"step": t.astype(int), "entropy": h, "val_acc": acc, "val_acc/x": acc})

    def judge(rng, _):
        offsets = rng.uniform(-spread, spread, problems)  # the same problems at every step and seed
        curves = [curve(rng, offsets) for _ in range(3)]
        m = entropy_law.law_fits_within_noise(_law_study(curves, problems * answers, ("x",)), "fig")
        return _verdict(m.effects, "not_above", 1.0)

    truth = Truth("line against the true noise (ρ = 2)", 2.0, (R,), C, nominal=math.nan)
    return Case("law fit, validation on fixed problems (the stated lean)", "not_above", 3, 1, (truth,), judge)


def law_shape_case(shape: str, steps, tau: float, label: str) -> Case:
    """The law-fit test (3 seeds) against another shape of accuracy in entropy, with binomial noise (ρ = 1),
    validated at ``steps``: how often the misfit is caught (contradicted, its power) and how often the law is still
    reproduced. No nominal level: whether a curve near the law is "described precisely" has no line."""

    def judge(rng, _):
        curves = [law_curve(rng, 1.0, steps, shape=shape, tau=tau) for _ in range(3)]
        return _verdict(entropy_law.law_fits_within_noise(_law_study(curves, 192), "fig").effects, "not_above", 1.0)

    truth = Truth(SHAPES[shape], 0.0, (R,), C, nominal=math.nan)
    return Case(f"law fit against {SHAPES[shape]}, {label}", "not_above", 3, 1, (truth,), judge)


# ---- numbers, trends, Welch -------------------------------------------------------------------------------------


def number_case(k: int, band: float = 2.0, sd: float = 2.0) -> Case:
    """verdicts.number_verdict: a measured number (k seeds, each N(μ, sd); one seed: its own standard error sd,
    not a difference between trained runs) against the paper's value 50 within ±band."""
    paper = 50.0

    def judge(rng, mu):
        values = rng.normal(mu, sd, k)
        effect = seeds.over_seeds(values) if k > 1 else Effect(float(values[0]), sd)
        return verdicts.number_verdict({"paper": paper}, effect, band, plan=False)["verdict"]

    truths = (
        Truth("line", paper + band, (R, C)),
        Truth("inside", paper, (C,), R),
        Truth("outside", paper + 3 * band, (R,), C),
    )
    return Case("number against the paper's value", "within", k, 1, truths, judge)


def between_runs_case() -> Case:
    """A trained run's number beside the paper's on one seed (Effect.between_runs): never judged."""

    def judge(rng, mu):
        effect = Effect(float(rng.normal(mu, 0.5)), 0.5, between_runs=True)
        return verdicts.number_verdict({"paper": 50.0}, effect, 2.0, plan=False)["verdict"]

    truths = (Truth("line", 52.0, (R, C)), Truth("outside", 60.0, (R,), C))
    return Case("trained run against the paper's, one seed", "within", 1, 1, truths, judge)


def size_trend_case(margin: float = 0.05, base_sd: float = 0.05, seed_sd: float = 0.02) -> Case:
    """log_linear_in_size's effect (entropy_law.size_trend): 5 sizes × 3 seeds, the seeds of a size sharing its
    base model (an offset of sd ``base_sd``), seed noise ``seed_sd``; claimed a slope beyond ±margin per decade."""
    sizes = [1e5, 3e5, 1e6, 3e6, 1e7]

    def judge(rng, slope):
        per_seed = []
        for s in sizes:
            u = rng.normal(0, base_sd)
            per_seed.append(list(slope * math.log10(s) + u + rng.normal(0, seed_sd, 3)))
        return _verdict({"slope": entropy_law.size_trend(sizes, per_seed)}, "differs", margin)

    return Case("size trend, shared base models", "differs", 3, 1, band_truths(margin, 0.15, "differs"), judge)


def welch_case(margin: float = 0.02, sd: float = 0.02) -> Case:
    """shared_coefficients' effect over seeds: the difference of two runs' means over 3 seeds each, Welch's
    standard error (entropy_law._difference); claimed within ±margin."""

    def judge(rng, theta):
        a, b = list(rng.normal(theta, sd, 3)), list(rng.normal(0, sd, 3))
        return _verdict({"gap": entropy_law._difference(a, b)}, "within", margin)

    return Case("Welch difference of two runs", "within", 3, 1, band_truths(margin, 0.05, "within"), judge)


def cases() -> list[Case]:
    return [
        over_seeds_case("above", 3, 1),
        over_seeds_case("above", 3, 4),
        over_seeds_case("above", 1, 1),
        intersection_worst_case(3),
        over_seeds_case("within", 3, 1, 1.0),
        over_seeds_case("not_below", 3, 1, 1.0),
        over_seeds_case("differs", 3, 1, 1.0),
        over_seeds_case("differs", 3, 3, 1.0),
        over_seeds_case("above", 10, 1),
        binomial_case(1),
        binomial_case(3),
        paired_problems_case(),
        correlation_case(),
        series_mean_case(),
        law_case(1),
        law_case(3),
        law_fixed_problems_case(),
        *(
            law_shape_case(shape, VAL_STEPS, 1.5, "validation every 5 steps, collapse in 2 (the mini study)")
            for shape in ("line", "exp(-H)", "step")
        ),
        *(
            law_shape_case(shape, DENSE_STEPS, 4.0, "every step to 10 then every 5, collapse over 4")
            for shape in ("line", "exp(-H)", "step")
        ),
        number_case(1),
        number_case(3),
        between_runs_case(),
        size_trend_case(),
        welch_case(),
    ]


def calibrate(
    draws: int = 4000, seed: int = 0, only: str | None = None, cases_: list[Case] | None = None
) -> pd.DataFrame:
    """One row per case, truth and wrong verdict: how often the audit gave it, against its stated level."""
    rows = []
    for i, case in enumerate(cases() if cases_ is None else cases_):
        if only and only not in case.name:
            continue
        for j, truth in enumerate(case.truths):
            rng = np.random.default_rng([seed, i, j])
            got = pd.Series([case.judge(rng, truth.value) for _ in range(draws)])
            share = got.value_counts(normalize=True)
            for wrong in truth.wrong:
                nominal = truth.nominal
                rows.append(
                    {
                        "case": case.name,
                        "relation": case.relation,
                        "seeds": case.seeds,
                        "effects": case.effects,
                        "truth": f"{truth.label} ({truth.value:g})",
                        "wrong": wrong,
                        "draws": draws,
                        "false_rate": float(share.get(wrong, 0.0)),
                        "nominal": nominal,
                        "power": float(share.get(truth.right, 0.0)) if truth.right else math.nan,
                        "inconclusive": float(share.get(INCONCLUSIVE, 0.0)),
                        "mc_se": math.sqrt(nominal * (1 - nominal) / draws) if math.isfinite(nominal) else math.nan,
                    }
                )
    return pd.DataFrame(rows)


def over_nominal(table: pd.DataFrame, k: float = 3.0) -> pd.DataFrame:
    """The rows whose false rate exceeds the nominal level by more than ``k`` Monte Carlo standard errors."""
    stated = table[table["nominal"].notna()]
    return stated[stated["false_rate"] > stated["nominal"] + k * stated["mc_se"]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draws", type=int, default=4000, help="simulated studies per case and truth")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", help="cases whose name contains this")
    ap.add_argument("--csv", help="write the table here")
    args = ap.parse_args(argv)
    table = calibrate(args.draws, args.seed, args.only)
    if args.csv:
        table.to_csv(args.csv, index=False)
    with pd.option_context("display.width", 200, "display.max_colwidth", 60, "display.max_rows", 500):
        print(table.drop(columns=["relation", "effects"]).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    bad = over_nominal(table)
    print(f"\n{len(table)} rows; {len(bad)} with a false rate above nominal + 3 Monte Carlo s.e.")
    return 1 if len(bad) else 0
