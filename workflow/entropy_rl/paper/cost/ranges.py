"""Each GPU job's estimate as a range, with what pays for it: the GPU-hours charged (``budget.job_hours``), at the
cheap and the costly ends of every range the estimate holds (``efficiency``: the update's and the rollout's
efficiencies where the data cannot say more; ``step``: the group filter's generation batches), at the worst case the
runs allow (every step at ``max_num_gen_batches``), and split by term: the update, the rollout of what is trained on,
the refills or oversampling beyond it, validation, the jobs' start-ups and relaunches, evaluation and sampling.
``snakemake claims_budget`` prints them by claim (``claim_ranges``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.scale import Scale
from .. import job_time
from . import architectures, budget


@dataclass(frozen=True)
class Spread:
    value: float  # GPU-hours charged
    low: float
    high: float
    worst: float  # every step's refills at the runs' bound
    terms: dict  # GPU-hours charged, by what pays for them

    def __add__(self, other: Spread) -> Spread:
        terms = {k: self.terms.get(k, 0.0) + other.terms.get(k, 0.0) for k in {*self.terms, *other.terms}}
        return Spread(
            self.value + other.value, self.low + other.low, self.high + other.high, self.worst + other.worst, terms
        )

    @property
    def largest(self) -> str:
        """What pays for most of it ("none" for no GPU job)."""
        order = sorted(self.terms, key=lambda t: TERMS.index(t) if t in TERMS else len(TERMS))  # ties: TERMS' order
        return max(order, key=self.terms.get) if order else "none"


NONE = Spread(0.0, 0.0, 0.0, 0.0, {})
# What pays for a job's GPU-hours; "refills" is also PRIME's oversampling (answers generated beyond those trained on).
TERMS = ("update", "rollout", "refills", "validation", "launches", "evaluation", "sampling")


def train_terms(scale: Scale, run_id: str, assumptions: dict) -> dict[str, float]:
    """One run's training GPU-hours charged, by term."""
    run, questions = scale.runs[run_id], sum(b.size for b in scale.benchmarks.values())
    arch = architectures.of_model(scale, run.model)
    time_ = budget.train_time(run, scale.placement(run_id), arch, assumptions, questions)
    startup = scale.config.get("pilot", {}).get("startup_minutes", 0)
    return {
        **time_.terms(),
        "launches": time_.launches_gpu_hours(job_time.max_job_minutes(scale.config.get("launch", {})), startup),
    }


def job_spread(scale: Scale, power_study=None, assumptions: dict | None = None) -> dict[str, Spread]:
    """Every job of ``budget.job_hours`` with its range, worst case and terms."""
    assumptions = assumptions or scale.config["budget"]
    at = {end: budget.job_hours(scale, power_study, assumptions, end) for end in budget.ENDS}
    out = {}
    for job, value in at["expected"].items():
        kind, name = job.split(":", 1)
        terms = {"evaluation": value} if kind == "eval" else {"sampling": value}
        if kind == "train":
            terms = train_terms(scale, name, assumptions)
        out[job] = Spread(value, at["low"][job], at["high"][job], max(value, at["bound"][job]), terms)
    return out


def claim_ranges(jobs: dict[str, frozenset[str]], spread: dict[str, Spread]) -> dict[str, Spread]:
    """Each claim's jobs summed (a job it needs paid once)."""
    return {claim: sum((spread[j] for j in sorted(js) if j in spread), NONE) for claim, js in jobs.items()}


def as_params(spread: dict[str, Spread]) -> dict[str, dict]:
    """The spread as a rule's params (plain, rounded: a rule's params are compared as they are written)."""
    return {
        job: {
            "value": round(s.value, 1),
            "low": round(s.low, 1),
            "high": round(s.high, 1),
            "worst": round(s.worst, 1),
            "terms": {k: round(v, 1) for k, v in sorted(s.terms.items())},
        }
        for job, s in sorted(spread.items())
    }


def from_params(params: dict[str, dict]) -> dict[str, Spread]:
    return {job: Spread(p["value"], p["low"], p["high"], p["worst"], dict(p["terms"])) for job, p in params.items()}
