"""Measurements of the power-sampling study beside RL (Karan & Du, 2025), from its answers.

The answers to one problem are correlated (an easy problem is answered right by every method, many
times), so methods are compared per problem, paired over the problems all methods answered, with the
standard error over problems: the problem, not the answer, is the independent unit. With several seeds,
each seed samples its own replicate of the base model and of the RL runs (core.power.methods), so a
measurement is made per seed (``Study.at_seed``) and the seeds are combined on its ``effects``
(audit.seeds): a difference then has to exceed seed-to-seed variation, not only the problems' noise.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from ...core import pass_rates
from ...core.power import methods as power_methods
from .. import majority, power_study
from .data import NotComparable, Study
from .registry import Measured, measurement
from .relations import Effect
from .stats import Z95, Z95_ONE_SIDED, binomial_se, bootstrap

# The study's methods of the base model, named as the study plan's power_methods names them (the later samplers by
# their kind); the RL methods are found by the run they sample.
PLAIN_POWER_METHODS = (*power_methods.PLAIN, *power_methods.LATER)


def _power_method(study: Study, artifact: str, role: str) -> str:
    """The method of ``artifact`` that plays ``role``: base, low-temp, power, smc or sps by the study's roles,
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
_QUANTITY = {
    "accuracy": "single-shot accuracy (%)",
    "pass_at_n": "unbiased pass@n (%, k = answers per problem)",
    "loglik": "base-model log-likelihood per answer token",
    "drawn": "tokens drawn per answer",
}


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
        return pd.Series(
            [100 * pass_rates.pass_at_k(int(n), int(c), k) for n, c in counts.to_numpy()], index=counts.index
        )
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


def _paired_effect(d: float, se: float, problems: int, trained: bool = False) -> Effect:
    """A difference paired over problems, its error over those problems (one seed). ``trained``: one side samples
    an RL checkpoint, whose variation with its RL seed the problems' noise leaves out (Effect.between_runs)."""
    return Effect(d, se, problems - 1, between_runs=trained)


@measurement(relation=lambda spec: spec["relation"])
def power_compare(
    study: Study, artifact: str, quantity: str, order: list[str], relation: str, benchmark: str | None = None
) -> Measured:
    """Each method of ``order`` against the next on a per-problem quantity, paired over problems: each
    difference an effect with its standard error over problems, judged by ``relation`` (relations.RELATIONS;
    "not_below" and "within" against the claim's margin)."""
    bench = _power_bench(study, benchmark)
    methods = [_power_method(study, artifact, role) for role in order]
    values = {m: _per_problem(study, m, quantity, bench) for m in methods}
    parts, effects = [], {}
    for (ra, a), (rb, b) in itertools.pairwise(zip(order, methods)):
        d, se, problems = _paired(values[a], values[b])
        effects[f"{ra} − {rb}"] = _paired_effect(d, se, problems, trained=bool({a, b} & set(study.power["runs"])))
        part = f"{ra} − {rb} {d:+.3g} ± {Z95 * se:.2g}"
        if quantity == "accuracy":  # what treating every answer as independent would claim
            naive = math.hypot(*(binomial_se(values[m].mean(), len(_answers(study, m, bench))) for m in (a, b)))
            part += f" (± {Z95 * naive:.2g} if answers were independent)"
        parts.append(part)
    means = ", ".join(f"{role} {values[m].mean():.3g}" for role, m in zip(order, methods))
    return Measured(
        f"{means}; {'; '.join(parts)}",
        f"{_QUANTITY[quantity]} per problem of {bench or 'every benchmark'} ({', '.join(methods)}), differences paired over {problems} problems, "
        "95% half-width from the standard error over problems",
        effects=effects,
    )


@measurement
def power_vs_majority(
    study: Study, artifact: str, method: str = "power", versus: str = "base", benchmark: str | None = None
) -> Measured:
    """``method``'s single-shot accuracy against a majority vote over k answers of ``versus`` (study.majority), k
    matched so that the k answers draw the tokens one answer of ``method`` draws (per answer over every benchmark,
    as the table's k); per problem, paired over problems. Holds when the difference is positive at the one-sided
    5% level. The effect is named without k, which is matched on each seed's own answers."""
    bench = _power_bench(study, benchmark)
    a, b = _power_method(study, artifact, method), _power_method(study, artifact, versus)
    target, drawn = study.samples(a)["drawn_tokens"].mean(), study.samples(b)["drawn_tokens"].mean()
    k, capped = majority.matched_k(drawn, target, majority.answers_per_problem(study.samples(b)))
    single = _per_problem(study, a, "accuracy", bench)
    votes = 100 * majority.majority_accuracy(_answers(study, b, bench), k)
    d, se, problems = _paired(single, votes)
    cap = f", capped at the {k} answers per problem" if capped else ""
    return Measured(
        f"{method} {single.mean():.3g}, {versus} majority of {k} {votes.mean():.3g}; "
        f"{method} − {versus} majority {d:+.3g} ± {Z95 * se:.2g} (k {k}: {k} × {drawn:.3g} = {k * drawn:.3g} tokens drawn against {target:.3g}{cap})",
        f"single-shot accuracy of {a} against the accuracy of a majority vote over {k} answers of {b} (its n // {k} disjoint groups "
        f"of {k} per problem, answers compared as the grader read them, a tie to the first given, an unread answer never winning), "
        f"per problem of {bench or 'every benchmark'}, paired over {problems} problems, 95% half-width from the standard error over problems",
        holds=bool(d > Z95_ONE_SIDED * se),
        effects={f"{method} − {versus} majority": _paired_effect(d, se, problems)},
    )


@measurement
def power_rises_with(study: Study, artifact: str, parameter: str, benchmark: str | None = None) -> Measured:
    """Accuracy rises along the sweep of ``parameter`` (every other setting at the main one's): the
    least-squares slope of accuracy on the parameter, per problem and averaged over problems, is
    positive at the one-sided 5% level with its standard error over problems."""
    bench = _power_bench(study, benchmark)
    main = study.power["methods"][_power_method(study, artifact, "power")]
    sweep = {
        m: s[parameter]
        for m in study.power_methods(artifact)
        if (s := study.power["methods"][m])["kind"] == "power"
        and all(s[k] == v for k, v in main.items() if k != parameter)
    }
    if len(set(sweep.values())) < 3:
        raise NotComparable(f"{artifact} sweeps {parameter} over fewer than 3 values")
    acc = pd.DataFrame({m: _per_problem(study, m, "accuracy", bench) for m in sweep}).dropna()
    x = np.array([sweep[m] for m in acc.columns], dtype=float)
    xc = x - x.mean()
    slopes = acc.to_numpy() @ xc / (xc @ xc)
    slope, se = float(slopes.mean()), float(slopes.std(ddof=1) / math.sqrt(len(slopes)))
    points = ", ".join(f"{v:g}: {acc[m].mean():.1f}%" for m, v in sorted(sweep.items(), key=lambda kv: kv[1]))
    return Measured(
        f"{points}; slope {slope:+.3g} ± {Z95 * se:.2g} points per unit of {parameter}",
        f"accuracy on {bench or 'every benchmark'} per problem along the {parameter} sweep of {artifact}, slope averaged over {len(slopes)} problems",
        holds=bool(slope > Z95_ONE_SIDED * se),
        effects={"slope": Effect(slope, se, len(slopes) - 1)},
    )


def _cost_effect(estimate: float, lo: float, hi: float) -> Effect:
    """The cost ratio's bootstrap interval as an effect: its 95% interval's half-width over 1.96 standard errors,
    the wider side's, so the normal bounds hold the bootstrap's."""
    return Effect(estimate, max(estimate - lo, hi - estimate) / Z95)


@measurement
def power_cost(study: Study, artifact: str, method: str = "power", versus: str = "base") -> Measured:
    """Tokens drawn per answer by ``method`` over ``versus`` (power_study.accuracy_table's cost), with
    a 95% bootstrap interval over problems; holds when the whole interval lies above 1."""
    a, b = _power_method(study, artifact, method), _power_method(study, artifact, versus)
    table = power_study.accuracy_table({a: study.samples(a), b: study.samples(b)}, reference=b)
    both = pd.concat([_per_problem(study, m, "drawn", None) for m in (a, b)], axis=1).dropna().to_numpy()
    lo, hi = bootstrap(lambda idx: both[idx, 0].mean() / both[idx, 1].mean(), list(range(len(both))))
    return Measured(
        f"{table.loc[a, f'cost vs {b}']:.3g}× ({table.loc[a, 'tokens drawn per answer']:.3g} vs {table.loc[b, 'tokens drawn per answer']:.3g} tokens drawn per answer), 95% interval [{lo:.3g}, {hi:.3g}]",
        f"power_study.accuracy_table over every benchmark; bootstrap over {len(both)} problems",
        holds=bool(lo > 1),
        effects={"cost − 1": _cost_effect(float(table.loc[a, f"cost vs {b}"]) - 1, lo - 1, hi - 1)},
    )


@measurement
def power_time(study: Study, artifact: str, method: str, versus: str) -> Measured:
    """Wall time per answer of ``method`` over that of ``versus`` (power_study.accuracy_table's ``time vs``), as the
    papers report latency: both sample the same problems on the same hardware, so the ratio is the measure."""
    a, b = _power_method(study, artifact, method), _power_method(study, artifact, versus)
    untimed = [m for m in (a, b) if "seconds" not in study.samples(m)]
    if untimed:
        raise NotComparable(
            f"the answers of {', '.join(untimed)} record no wall time (sampled before samplers timed "
            "their answers; rerunning them is priced by the paid-work guard)"
        )
    table = power_study.accuracy_table({a: study.samples(a), b: study.samples(b)}, reference=b)
    ratio = float(table.loc[a, f"time vs {b}"])
    return Measured(
        ratio,
        f"wall time per answer of {a} ({table.loc[a, 'seconds per answer']:.3g} s) over that of {b} "
        f"({table.loc[b, 'seconds per answer']:.3g} s), every benchmark",
    )


@measurement
def power_accuracy_cell(study: Study, artifact: str, model: str, method: str, benchmark: str) -> Measured:
    """One cell of Karan & Du's Table 1 (%): single-shot accuracy (mean over all answers), within
    1.96·√2 binomial standard errors at the number of problems, as for Table 2's cells."""
    scale_model = study.model_roles.get(model)
    if study.power and study.power["model"] != scale_model:
        raise NotComparable(
            f"the power-sampling study samples {study.power['model']}, not {model}'s role {scale_model}"
        )
    m = _power_method(study, artifact, method)
    bench = _power_bench(study, benchmark)
    value = 100 * float(power_study.accuracy_table({m: study.samples(m)}, reference=m).loc[m, bench])
    problems = study.power["problems"][bench]
    se = math.sqrt(2) * binomial_se(value, problems)
    trained = m in study.power["runs"]  # an RL checkpoint's answers: a trained run beside the paper's
    return Measured(
        value,
        f"mean correctness of {m}'s {study.power['n']} answers to each of {problems} problems of {bench}",
        interval=(value - Z95 * se, value + Z95 * se),
        spread=Effect(value, se, between_runs=trained),
    )
