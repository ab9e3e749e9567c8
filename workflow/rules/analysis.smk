rule fit_run:
    """R = -a exp(H) + b on one run's validation points, and the early-step prediction."""
    input:
        metrics=RUN_METRICS,
        code=code("fit_run", "study.analysis"),
    output:
        RUN_FIT,
    params:
        early_fit_steps=S["analysis"]["early_fit_steps"],
    log:
        "results/logs/fit_run/{run}.log",
    container:
        image("analysis")
    script:
        "../scripts/fit_run.py"


rule fit_table:
    """Every run's fit in one table."""
    input:
        fits=expand(RUN_FIT, run=STUDY_RUNS),
    output:
        csv=FIT_TABLE,
        parquet="results/analysis/fits.parquet",
    log:
        "results/logs/fit_table.log",
    container:
        image("analysis")
    script:
        "../scripts/fit_table.py"
