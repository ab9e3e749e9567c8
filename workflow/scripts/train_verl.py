from entropy_rl.paper import train_job

train_job.main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
