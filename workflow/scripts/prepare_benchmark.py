from entropy_rl.paper import data

data.prepare_benchmark_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
