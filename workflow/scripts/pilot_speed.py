from entropy_rl.paper.cost import speed_job

speed_job.main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
