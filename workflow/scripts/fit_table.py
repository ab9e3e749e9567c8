from entropy_rl.study import fit_job

fit_job.fit_table_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
