from entropy_rl.core import atomic, logs
from entropy_rl.pipeline import claim_plan

log = logs.setup(snakemake.log[0])
p = snakemake.params
jobs = {claim: frozenset(js) for claim, js in p.jobs.items()}
table = claim_plan.claims_table(jobs, p.hours, p.artifacts).sort_values("gpu_hours", kind="stable")
everything = claim_plan.everything(jobs, p.hours)
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
