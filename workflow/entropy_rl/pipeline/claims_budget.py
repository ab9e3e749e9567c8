"""What each claim costs to judge, as the page ``snakemake claims_budget`` writes (results/budget/claims.md, and its
table as .csv): every claim with the jobs it needs and their GPU-hours (``claim_plan``), what each budget buys, the
estimate as a range by claim (``paper.cost.ranges``) and, at paper scale, the assumed MFUs beside published runs
(``paper.cost.anchors``). The rule's script calls ``main``; its table is rendered by core.pages."""

from __future__ import annotations

from ..core import atomic, logs, pages
from ..paper.cost import ranges
from . import claim_plan


def largest_term(spread: ranges.Spread) -> str:
    """What pays for most of a claim's GPU-hours, with its share."""
    return f"{spread.largest} ({spread.terms[spread.largest] / spread.value:.0%})" if spread.value else "none"


def claims_table(jobs: dict[str, frozenset[str]], hours: dict[str, float], artifacts: dict[str, str], spread: dict):
    """``claim_plan.claims_table`` cheapest first; with ``spread`` (each claim's range, ``ranges.claim_ranges``), each
    claim's GPU-hours at the ends of the estimate's ranges (``low``, ``high``, ``worst_case``) and its
    ``largest_term``."""
    table = claim_plan.claims_table(jobs, hours, artifacts).sort_values("gpu_hours", kind="stable")
    if spread:
        columns = {"low": lambda s: s.low, "high": lambda s: s.high, "worst_case": lambda s: s.worst}
        for column, value in {**columns, "largest_term": largest_term}.items():
            table[column] = [value(spread[c]) if c in spread else None for c in table["claim"]]
        table[["low", "high", "worst_case"]] = table[["low", "high", "worst_case"]].round(0)
    return table


def spread_lines(whole: ranges.Spread) -> list[str]:
    """All claims' GPU-hours as a range, by term."""
    terms = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(whole.terms.items(), key=lambda kv: -kv[1]))
    return [
        (
            f"The estimate as a range: all claims {whole.low:,.0f} to {whole.high:,.0f} GPU-hours (charged"
            f" {whole.value:,.0f}), every efficiency and the group filter's refills at their cheap and costly ends"
            f" (config.yaml paper.budget ranges, gen_batches; the pilot's speed laws' forms beyond the sizes they"
            f" timed); {whole.worst:,.0f} if every step refilled to its max_num_gen_batches. By term: {terms}."
            " `low`, `high` and `worst_case` below are each claim's, `largest_term` what pays for most of it."
        ),
        "",
    ]


def anchor_lines(anchors: list[str]) -> list[str]:
    """The configured MFUs beside published runs (``paper.cost.anchors.lines``), under their heading."""
    if not anchors:
        return []
    return [
        "## The assumed MFUs beside published runs",
        "",
        (
            "A published GRPO step's FLOPs (counted by its architecture as this estimate counts them, with the"
            " passes its system runs) over its GPU-seconds at the GPU's dense bf16 peak, and the step time this"
            " budget's MFUs would give it, for published runs that give every number it needs"
            " (entropy_rl.paper.cost.anchors):"
        ),
        "",
        *anchors,
        "",
    ]


def page(p, jobs: dict[str, frozenset[str]], table, whole: ranges.Spread | None) -> list[str]:
    """The page's lines, from the rule's params ``p`` (scale, hours, budgets, how, anchors), the claims' ``table`` and
    all claims' range (``whole``; None without ranges)."""
    everything = claim_plan.everything(jobs, p.hours)
    rule = claim_plan.within_budget(jobs, 1, p.hours).rule.split(", ", 1)[1]
    return [
        f"# What each claim costs to judge ({p.scale} scale)",
        "",
        (
            "Every claim of claims.yaml with the jobs it needs (its artifact's runs, their evaluations where it reads"
            f" test accuracy, the power-sampling jobs) and their GPU-hours alone ({p.how}). All {len(jobs)} claims"
            f" together: {everything.gpu_hours:,.0f} GPU-hours; a job shared by several claims is paid once."
        ),
        "",
        f"Budgets (`--config budget_gpu_hours=N`), chosen by the rule: {rule}.",
        "",
        *claim_plan.budget_lines(jobs, p.hours, p.budgets),
        "",
        *(spread_lines(whole) if whole else []),
        pages.md_frame(table, index=False),
        "",
        *anchor_lines(p.anchors),
    ]


def main(snakemake) -> None:
    """The claims_budget rule's job: its page (``output.md``) and table (``output.csv``)."""
    log = logs.setup(snakemake.log[0])
    p = snakemake.params
    jobs = {claim: frozenset(js) for claim, js in p.jobs.items()}
    spread, whole = {}, None
    if p.spread:  # each job's range and what pays for it
        job_spread = ranges.from_params(p.spread)
        spread = ranges.claim_ranges(jobs, job_spread)
        whole = ranges.claim_ranges({"all": frozenset().union(*jobs.values())}, job_spread)["all"] if spread else None
    table = claims_table(jobs, p.hours, p.artifacts, spread)
    lines = page(p, jobs, table, whole)
    atomic.write_text(snakemake.output.md, "\n".join(lines))
    atomic.write_text(snakemake.output.csv, table.to_csv(index=False))
    log.info("\n%s", "\n".join(lines[:12]))
