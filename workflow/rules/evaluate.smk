rule evaluate:
    """The final policy on every benchmark, with the paper's decoding protocol, graded by math-verify."""
    input:
        model="results/runs/{run}/final",
        benchmarks=bench_files(),
        code=code("evaluate", "generation", "grading", "data", "models"),
    output:
        samples=expand("results/eval/{{run}}/{benchmark}.parquet", benchmark=BENCHMARKS),
        summary="results/eval/{run}/summary.parquet",
    params:
        protocols=protocols(),
        max_new_tokens=S["eval"]["max_new_tokens"],
        pass_k=S["eval"]["pass_k"],
        seed=S["eval"]["seed"],
    threads: 1
    log:
        "results/logs/evaluate/{run}.log",
    script:
        "../scripts/evaluate.py"
