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


rule fit_law:
    """Figures 3 and 5 for any run: a, b, R², RMSE, the ceiling and the last step predicted from the first 15% of
    steps, from its training log (verl's jsonl, TRL's trainer_state.json or a CSV; `fit-law` outside the workflow)."""
    input:
        log=fit_law_log,
        code=code("fit_law", "study.fit_law"),
    output:
        json=FIT_LAW.format(name=fit_law_name()) + ".json",
        png=FIT_LAW.format(name=fit_law_name()) + ".png",
        pdf=FIT_LAW.format(name=fit_law_name()) + ".pdf",
    localrule: True
    log:
        FIT_LAW_LOG.format(name=fit_law_name()),
    container:
        image("analysis")
    script:
        "../scripts/fit_law.py"
