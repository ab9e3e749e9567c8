import os

from entropy_rl.core import paths
from entropy_rl.paper.cost import anchors
from entropy_rl.pipeline import claims as claim_choice
from entropy_rl.pipeline import params as pipeline_params
from entropy_rl.pipeline.stamps import canonical


rule audit:
    """Every claim of the ledger (claims.yaml) beside what this run measured, with a verdict."""
    input:
        ledger=PLAN.ledger,
        schema=os.path.join(workflow.basedir, "workflow", "schemas", "claims.schema.yaml"),
        metrics=expand(paths.RUN_METRICS, run=PLAN.study_runs),
        summaries=expand(paths.EVAL_SUMMARY, run=PLAN.evaluated_runs),  # only the runs its claims read on the test sets
        models=expand(paths.MODEL_DIR, model=PLAN.study_models),
        power=expand(paths.POWER_SAMPLES, method=PLAN.study_power_methods) if PLAN.power else [],
        code=PLAN.code("audit", "study.audit"),
    output:
        md=paths.AUDIT_MD,
        html=report(paths.AUDIT_HTML, caption="../report/audit.rst", category="Audit", labels={pipeline_params.REPORT_LABEL: "audit · every claim of claims.yaml"}),
        csv=paths.AUDIT_CSV,
    params:
        **pipeline_params.audit_params(PLAN),
    log:
        paths.log("audit"),
    container:
        PLAN.image("analysis")
    script:
        "../scripts/audit.py"


rule claims_budget:
    """What each claim of the ledger costs to judge at this scale, and what budgets buy (`snakemake claims_budget`)."""
    output:
        md=paths.CLAIMS_BUDGET_MD,
        csv=paths.CLAIMS_BUDGET_CSV,
    params:
        scale=PLAN.scale.name,
        jobs=canonical({c: sorted(js) for c, js in PLAN.claim_jobs.items()}),
        hours=canonical({j: round(h, 2) for j, h in PLAN.job_hours.items()}),
        # each job's range and what pays for it: computed when the rule runs, not at every plan
        spread=lambda wildcards: claim_choice.job_spread(PLAN.scope, PLAN.power_study, PLAN.budget),
        artifacts={c["id"]: c["measure"]["artifact"] for c in PLAN.claims},
        budgets=[500, 5000, 50000],
        how=claim_choice.budget_source(PLAN.scale, PLAN.budget, paths.PILOT_ESTIMATE),
        anchors=anchors.lines(PLAN.S["budget"]) if PLAN.scope.gpu else [],  # the configured assumption beside published runs
    localrule: True
    log:
        paths.log("claims_budget"),
    container:
        PLAN.image("analysis")
    script:
        "../scripts/claims_budget.py"
