from entropy_rl.paper.cost import pilot_jobs

pilot_jobs.pilot_benchmark_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
