"""Measurements of test accuracy: Table 2's cells and averages, and the methods against GRPO, with
binomial noise from each benchmark's number of problems.

These are the measurements that read the runs' test-set evaluations, and the workflow evaluates only the runs
they read: a measurement added here is named in ``study.artifacts.EVAL_MEASUREMENTS`` too (a test holds the two
equal)."""

from __future__ import annotations

import math

from ...core.spec import replicate_of
from .data import NotComparable, Study
from .registry import Measured, measurement
from .relations import Effect
from .stats import Z95, binomial_se


def _avg_se(study: Study, run: str) -> float:
    """Binomial standard error (points) of a run's benchmark mean, from each benchmark's problem count."""
    s = study.summary(run).set_index("benchmark")
    var = sum(p * (1 - p) / study.bench_sizes[b] for b, p in s["avg_at_n"].items())
    return 100 * math.sqrt(var) / len(s)


@measurement(relation=lambda spec: spec["relation"])
def accuracy_vs_baseline(study: Study, artifact: str, methods: list[str], relation: str) -> Measured:
    """Each run of ``methods`` against the same model's GRPO run on the test benchmarks' mean (points): each
    difference an effect with the binomial standard error of the difference at the benchmarks' sizes, judged
    by ``relation`` ("above": every run scores above GRPO; "below": below; "not_above": no run beats GRPO by
    the claim's margin or more)."""
    runs = study.runs(artifact)
    parts, holds, effects = [], True, {}
    for r in runs:
        if study.method(r) not in methods:
            continue
        base = study.baseline(runs, study.specs[r].model)
        diff = study.test_average(r) - study.test_average(base)
        se = math.hypot(_avg_se(study, r), _avg_se(study, base))
        parts.append(f"{r} {diff:+.1f} ± {Z95 * se:.1f}")
        holds &= {"above": diff > 0, "below": diff < 0}.get(relation, diff <= 0)
        effects[f"{study.name(r)} - GRPO"] = Effect(diff, se, between_runs=True)
    if not parts:
        raise NotComparable(f"{artifact} has no {methods} runs")
    return Measured(
        "; ".join(parts),
        f"test-set mean accuracy minus the same model's GRPO run (points), runs of {artifact}",
        holds=bool(holds),
        effects=effects,
    )


def _table2_run(study: Study, artifact: str, model: str, method_name: str) -> str:
    scale_model = study.model_roles.get(model)
    picked = [
        r
        for r in study.runs(artifact)
        if replicate_of(study.specs[r].model)[0] == scale_model and study.method(r) == method_name
    ]
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
    return _against_paper(
        value, math.sqrt(2) * binomial_se(value, study.bench_sizes[bench]), f"avg@n of {run} on {bench}"
    )


def _against_paper(value: float, se: float, how: str) -> Measured:
    """A trained run's number beside the paper's: its 95% interval, and its noise as a difference between two
    trained runs (this one and the paper's), which one seed cannot judge (relations.Effect.between_runs)."""
    half = Z95 * se
    return Measured(value, how, interval=(value - half, value + half), spread=Effect(value, se, between_runs=True))


@measurement
def benchmark_average(study: Study, artifact: str, model: str, method: str) -> Measured:
    run = _table2_run(study, artifact, model, method)
    return _against_paper(study.test_average(run), math.sqrt(2) * _avg_se(study, run), f"mean over benchmarks of {run}")


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
        se = math.hypot(binomial_se(score(best), n), binomial_se(score(base), n))
    return _against_paper(
        value, math.sqrt(2) * se, f"{best} minus {base} ({'mean over benchmarks' if benchmark is None else benchmark})"
    )
