rule prepare_mini_data:
    """Procedural tasks from reasoning-gym at fixed seeds, as verl parquet."""
    input:
        code=code("data"),
    output:
        train="results/data/train.parquet",
        pretrain="results/data/pretrain.parquet",
        benchmarks=bench_files(),
    params:
        spec=canonical(S["data"]),
    log:
        "results/logs/prepare_mini_data.log",
    script:
        "../scripts/prepare_mini_data.py"
