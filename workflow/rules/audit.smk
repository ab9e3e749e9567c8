import os

from entropy_rl.paper.cost import anchors

# The audit's row in `snakemake --report`, labelled as the figures' are (common.smk report_labels).
AUDIT_LABELS = {REPORT_LABEL: "audit · every claim of claims.yaml"}


rule audit:
    """Every claim of the ledger (claims.yaml) beside what this run measured, with a verdict."""
    input:
        ledger=LEDGER,
        schema=os.path.join(workflow.basedir, "workflow", "schemas", "claims.schema.yaml"),
        metrics=run_metrics(STUDY_RUNS),
        summaries=expand(EVAL_SUMMARY, run=EVALUATED_RUNS),  # only the runs its claims read on the test sets
        models=expand(MODEL_DIR, model=STUDY_MODELS),
        power=expand(POWER_SAMPLES, method=STUDY_POWER_METHODS) if POWER else [],
        code=code("audit", "study.audit"),
    output:
        md=AUDIT_MD,
        html=report(AUDIT_HTML, caption="../report/audit.rst", category="Audit", labels=AUDIT_LABELS),
        csv=AUDIT_CSV,
    params:
        **audit_params(),
    log:
        "results/logs/audit.log",
    container:
        image("analysis")
    script:
        "../scripts/audit.py"


rule claims_budget:
    """What each claim of the ledger costs to judge at this scale, and what budgets buy (`snakemake claims_budget`)."""
    output:
        md="results/budget/claims.md",
        csv="results/budget/claims.csv",
    params:
        scale=SCALE,
        jobs=canonical({c: sorted(js) for c, js in CLAIM_JOBS.items()}),
        hours=canonical({j: round(h, 2) for j, h in JOB_HOURS.items()}),
        # each job's range and what pays for it: computed when the rule runs, not at every plan
        spread=lambda wildcards: job_spread(),
        artifacts={c["id"]: c["measure"]["artifact"] for c in CLAIMS},
        budgets=[500, 5000, 50000],
        how=budget_source(),
        anchors=[] if MINI else anchors.lines(S["budget"]),  # the configured assumption beside published runs
    localrule: True
    log:
        "results/logs/claims_budget.log",
    container:
        image("analysis")
    script:
        "../scripts/claims_budget.py"
