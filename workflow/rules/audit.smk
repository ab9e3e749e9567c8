rule audit:
    """Every claim of the ledger (claims.yaml) beside what this run measured, with a verdict."""
    input:
        ledger=LEDGER,
        schema=os.path.join(workflow.basedir, "workflow", "schemas", "claims.schema.yaml"),
        metrics=run_metrics(RUNS),
        summaries=expand(EVAL_SUMMARY, run=EVALUATED_RUNS),  # only the runs its claims read on the test sets
        models=expand(MODEL_DIR, model=MODELS),
        power=expand(POWER_SAMPLES, method=list(power_methods())) if POWER else [],
        code=code("audit", "study.audit"),
    output:
        md=AUDIT_MD,
        html=report("results/audit/audit.html", caption="../report/audit.rst", category="Audit"),
        csv="results/audit/audit.csv",
    params:
        **audit_params(),
    log:
        "results/logs/audit.log",
    container:
        image("analysis")
    script:
        "../scripts/audit.py"
