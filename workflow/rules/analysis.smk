from entropy_rl.core import paths


rule fit_run:
    """R = -a exp(H) + b on one run's validation points, and the early-step prediction."""
    input:
        metrics=paths.RUN_METRICS,
        code=PLAN.code("fit_run", "study.fit_job"),
    output:
        paths.RUN_FIT,
    params:
        early_fit_steps=PLAN.S["analysis"]["early_fit_steps"],
    log:
        paths.log("fit_run", "{run}"),
    container:
        PLAN.image("analysis")
    script:
        "../scripts/fit_run.py"


rule fit_table:
    """Every run's fit in one table."""
    input:
        fits=expand(paths.RUN_FIT, run=PLAN.study_runs),
        code=PLAN.code("fit_table", "study.fit_job"),
    output:
        csv=paths.FIT_TABLE,
        parquet=paths.FIT_TABLE_PARQUET,
    log:
        paths.log("fit_table"),
    container:
        PLAN.image("analysis")
    script:
        "../scripts/fit_table.py"


rule fit_law:
    """Figures 3 and 5 for any run: a, b, R², RMSE, the ceiling and the last step predicted from the first 15% of
    steps, from its training log (verl's jsonl, TRL's trainer_state.json or a CSV; `fit-law` outside the workflow)."""
    input:
        log=fit_law_log,
        code=PLAN.code("fit_law", "study.fit_law"),
    output:
        json=paths.FIT_LAW.format(name=PLAN.fit_law_name) + ".json",
        png=paths.FIT_LAW.format(name=PLAN.fit_law_name) + ".png",
        pdf=paths.FIT_LAW.format(name=PLAN.fit_law_name) + ".pdf",
    localrule: True
    log:
        paths.FIT_LAW_LOG.format(name=PLAN.fit_law_name),
    container:
        PLAN.image("analysis")
    script:
        "../scripts/fit_law.py"
