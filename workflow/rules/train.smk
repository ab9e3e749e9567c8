rule train:
    """One RL run: base model x algorithm x entropy treatment (the mini trainer)."""
    input:
        model=run_model_dir,
        train="results/data/train.parquet",
        benchmarks=bench_files(),
        code=code("trainer", "algorithms", "prime", "metrics", "generation", "grading", "evaluate", "data", "models"),
    output:
        metrics="results/runs/{run}/metrics.parquet",
        final=directory("results/runs/{run}/final"),
    params:
        spec=run_settings,
    threads: 1
    log:
        "results/logs/train/{run}.log",
    script:
        "../scripts/train.py"
