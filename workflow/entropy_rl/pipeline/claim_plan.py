"""What each claim of the ledger costs to judge, and which claims a budget buys.

A claim is judged from the runs of one figure or table (its ``measure.artifact``): their training
jobs, their evaluations on the test sets where the claim reads test accuracy, and, for the power
sampling study, its sampling jobs and the RL runs whose checkpoints they sample. Jobs are named
``train:<run>``, ``eval:<run>`` and ``power:<method>``; a job shared by several claims is paid once.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from ..core.scale import Scale


@dataclass(frozen=True)
class Selection:
    claims: list[str]  # the claims judged, in ledger order
    jobs: frozenset[str]  # every job they need
    gpu_hours: float
    rule: str  # how they were chosen, in one sentence


def claim_jobs(
    claims: list[dict], artifact_jobs: dict[str, frozenset[str]], eval_jobs: dict[str, frozenset[str]], reads_tests
) -> dict[str, frozenset[str]]:
    """Each claim's jobs: its artifact's (``artifact_jobs``), and the evaluations of its runs (``eval_jobs``) when
    ``reads_tests(claim)``. A claim whose artifact this scale does not build needs nothing (it is not comparable)."""
    out = {}
    for claim in claims:
        name = claim["measure"]["artifact"]
        jobs = set(artifact_jobs.get(name, ()))
        if reads_tests(claim):
            jobs |= eval_jobs.get(name, frozenset())
        out[claim["id"]] = frozenset(jobs)
    return out


def cost(jobs, job_hours: dict[str, float]) -> float:
    return sum(job_hours[j] for j in jobs)


def by_pattern(jobs: dict[str, frozenset[str]], patterns: list[str], job_hours: dict[str, float]) -> Selection:
    """The claims whose id matches one of ``patterns`` (an id, or a shell pattern such as ``law/*``)."""
    unknown = [p for p in patterns if not any(fnmatch.fnmatchcase(c, p) for c in jobs)]
    if unknown:
        raise ValueError(f"claims {unknown} match no claim of the ledger (ids such as {sorted(jobs)[:3]})")
    chosen = [c for c in jobs if any(fnmatch.fnmatchcase(c, p) for p in patterns)]
    needed = frozenset().union(*(jobs[c] for c in chosen))
    return Selection(chosen, needed, cost(needed, job_hours), f"the claims matching {', '.join(patterns)}")


def within_budget(jobs: dict[str, frozenset[str]], budget: float, job_hours: dict[str, float]) -> Selection:
    """The most claims whose jobs fit in ``budget`` GPU-hours, by a greedy rule: repeatedly take the claim whose jobs
    not yet taken cost least (ties in ledger order) while the total stays within the budget. Claims that share runs
    come almost free once one of them is taken, which this rule exploits; it is not guaranteed optimal (that is a
    budgeted maximum-coverage problem) but each step is the cheapest claim to add."""
    chosen, taken, spent = [], set(), 0.0
    left = list(jobs)
    while True:
        extra = {c: cost(jobs[c] - taken, job_hours) for c in left}
        fitting = [c for c in left if spent + extra[c] <= budget]
        if not fitting:
            break
        best = min(fitting, key=lambda c: (extra[c], left.index(c)))
        chosen.append(best)
        taken |= jobs[best]
        spent += extra[best]
        left.remove(best)
    order = {c: i for i, c in enumerate(jobs)}
    rule = (
        f"within {budget:,.0f} GPU-hours, the claim whose jobs not yet taken cost least, repeatedly (ties in ledger"
        " order)"
    )
    return Selection(sorted(chosen, key=order.get), frozenset(taken), spent, rule)


def everything(jobs: dict[str, frozenset[str]], job_hours: dict[str, float]) -> Selection:
    needed = frozenset().union(*jobs.values())
    return Selection(list(jobs), needed, cost(needed, job_hours), "every claim of the ledger")


def select(jobs: dict[str, frozenset[str]], job_hours: dict[str, float], patterns=None, budget=None) -> Selection:
    """The claims a study judges: those named (``patterns``), those a budget buys, or all (the default)."""
    if patterns and budget is not None:
        raise ValueError("ask for claims by name (claims=...) or by budget (budget_gpu_hours=...), not both")
    if patterns:
        return by_pattern(jobs, list(patterns), job_hours)
    if budget is not None:
        return within_budget(jobs, float(budget), job_hours)
    return everything(jobs, job_hours)


def shared_with(jobs: dict[str, frozenset[str]]) -> dict[str, list[str]]:
    """For each claim, the other claims that need at least one of its jobs."""
    return {c: [o for o in jobs if o != c and jobs[o] & js] for c, js in jobs.items()}


def not_run(jobs: dict[str, frozenset[str]], selection: Selection, job_hours: dict[str, float]) -> dict[str, float]:
    """Each claim left out of ``selection``, with the GPU-hours of the jobs it would add to the selection's."""
    chosen = set(selection.claims)
    return {c: cost(js - selection.jobs, job_hours) for c, js in jobs.items() if c not in chosen}


def study_jobs(
    scale: Scale, claims: list[dict], reads_tests, power_study=None, power_drawn=None
) -> dict[str, frozenset[str]]:
    """Each claim's jobs at one scale (its runs with their replicates, core.spec.with_replicates):
    the training of its artifact's runs (every replicate), their evaluations if ``reads_tests(claim)``, and for the
    power-sampling study's artifacts (``power_drawn``: artifact -> the methods it draws) the sampling jobs (every
    seed) and the runs whose checkpoints they sample."""

    def runs(name):
        return [rep for run in scale.config["artifacts"][name]["runs"] for rep in scale.replicates(run)]

    artifact_jobs, eval_jobs = {}, {}
    for name in scale.config["artifacts"]:
        artifact_jobs[name] = frozenset(f"train:{r}" for r in runs(name))
        eval_jobs[name] = frozenset(f"eval:{r}" for r in runs(name))
    for name, methods in (power_drawn or {}).items():
        seeded = power_study.with_seeds(methods)
        sampled = {power_study.methods[m]["run"] for m in seeded if "run" in power_study.methods[m]}
        artifact_jobs[name] = frozenset([f"power:{m}" for m in seeded] + [f"train:{r}" for r in sampled])
    return claim_jobs(claims, artifact_jobs, eval_jobs, reads_tests)


def runs_of(jobs) -> list[str]:
    return sorted(j.split(":", 1)[1] for j in jobs if j.startswith("train:"))


def evaluations_of(jobs) -> list[str]:
    return sorted(j.split(":", 1)[1] for j in jobs if j.startswith("eval:"))


def methods_of(jobs) -> list[str]:
    return sorted(j.split(":", 1)[1] for j in jobs if j.startswith("power:"))


def claims_table(jobs: dict[str, frozenset[str]], job_hours: dict[str, float], artifact: dict[str, str]):
    """One row per claim: its artifact, runs, evaluations and samples, GPU-hours alone, and the claims it shares
    jobs with (sharing makes the second claim cheaper)."""
    import pandas as pd

    shared = shared_with(jobs)
    return pd.DataFrame(
        [
            {
                "claim": c,
                "artifact": artifact[c],
                "runs": len(runs_of(js)),
                "evaluations": len(evaluations_of(js)),
                "samples": len(methods_of(js)),
                "gpu_hours": round(cost(js, job_hours), 1),
                "shares_jobs_with": len(shared[c]),
            }
            for c, js in jobs.items()
        ]
    )


def budget_lines(jobs: dict[str, frozenset[str]], job_hours: dict[str, float], budgets: list[float]) -> list[str]:
    """For each budget: how many claims it judges, at what cost, with which runs and samples."""
    out = []
    for b in budgets:
        sel = within_budget(jobs, b, job_hours)
        out.append(
            f"- **{b:,.0f} GPU-hours**: {len(sel.claims)} of {len(jobs)} claims, {sel.gpu_hours:,.0f} GPU-hours;"
            f" runs: {', '.join(runs_of(sel.jobs)) or 'none'}; samples: {', '.join(methods_of(sel.jobs)) or 'none'};"
            f" evaluations: {len(evaluations_of(sel.jobs))}"
        )
    return out
