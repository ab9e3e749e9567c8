rule audit:
    """Every claim of the ledger (claims.yaml) beside what this run measured, with a verdict."""
    input:
        ledger=os.path.join(workflow.basedir, "claims.yaml"),
        schema=os.path.join(workflow.basedir, "workflow", "schemas", "claims.schema.yaml"),
        metrics=run_metrics(RUNS),
        summaries=expand("results/eval/{run}/summary.parquet", run=RUNS),
        models=expand("results/models/{model}", model=MODELS),
        power=power_samples(list(power_methods())) if POWER else [],
        code=code("audit", "analysis", "artifacts", "power_study", "evaluate"),
    output:
        md="results/audit/audit.md",
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
