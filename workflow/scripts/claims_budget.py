from entropy_rl.core import atomic, logs
from entropy_rl.paper.cost import ranges
from entropy_rl.pipeline import claim_plan

log = logs.setup(snakemake.log[0])
p = snakemake.params
jobs = {claim: frozenset(js) for claim, js in p.jobs.items()}
table = claim_plan.claims_table(jobs, p.hours, p.artifacts).sort_values("gpu_hours", kind="stable")
everything = claim_plan.everything(jobs, p.hours)
spread = ranges.claim_ranges(jobs, ranges.from_params(p.spread)) if p.spread else {}
if spread:  # each claim's GPU-hours at the ends of the estimate's ranges, and what pays for most of them
    for column, value in (("low", lambda s: s.low), ("high", lambda s: s.high), ("worst_case", lambda s: s.worst),
                          ("largest_term", lambda s: f"{s.largest} ({s.terms[s.largest] / s.value:.0%})" if s.value else "none")):  # fmt: skip
        table[column] = [value(spread[c]) if c in spread else None for c in table["claim"]]
    table[["low", "high", "worst_case"]] = table[["low", "high", "worst_case"]].round(0)
    whole = ranges.claim_ranges({"all": frozenset().union(*jobs.values())}, ranges.from_params(p.spread))["all"]
lines = [
    f"# What each claim costs to judge ({p.scale} scale)",
    "",
    (
        f"Every claim of claims.yaml with the jobs it needs (its artifact's runs, their evaluations where it reads test"
        f" accuracy, the power-sampling jobs) and their GPU-hours alone ({p.how}). All {len(jobs)} claims together:"
        f" {everything.gpu_hours:,.0f} GPU-hours; a job shared by several claims is paid once."
    ),
    "",
    f"Budgets (`--config budget_gpu_hours=N`), chosen by the rule: {claim_plan.within_budget(jobs, 1, p.hours).rule.split(', ', 1)[1]}.",
    "",
    *claim_plan.budget_lines(jobs, p.hours, p.budgets),
    "",
    *(
        [
            (
                f"The estimate as a range: all claims {whole.low:,.0f} to {whole.high:,.0f} GPU-hours (charged"
                f" {whole.value:,.0f}), every efficiency and the group filter's refills at their cheap and costly ends"
                f" (config.yaml paper.budget ranges, gen_batches; the pilot's speed laws' forms beyond the sizes they"
                f" timed); {whole.worst:,.0f} if every step refilled to its max_num_gen_batches. By term: "
                + ", ".join(f"{k} {v:,.0f}" for k, v in sorted(whole.terms.items(), key=lambda kv: -kv[1]))
                + ". `low`, `high` and `worst_case` below are each claim's, `largest_term` what pays for most of it."
            ),
            "",
        ]
        if spread
        else []
    ),
    table.to_markdown(index=False),
    "",
]
if p.anchors:
    lines += [
        "## The assumed MFUs beside published runs",
        "",
        (
            "A published GRPO step's FLOPs (counted by its architecture as this estimate counts them, with the passes"
            " its system runs) over its GPU-seconds at the GPU's dense bf16 peak, and the step time this budget's MFUs"
            " would give it, for published runs that give every number it needs (entropy_rl.paper.cost.anchors):"
        ),
        "",
        *p.anchors,
        "",
    ]
atomic.write_text(snakemake.output.md, "\n".join(lines))
atomic.write_text(snakemake.output.csv, table.to_csv(index=False))
log.info("\n%s", "\n".join(lines[:12]))
