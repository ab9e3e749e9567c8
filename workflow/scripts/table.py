# One script for every table, the paper's and the power-sampling study's (entropy_rl.study.table_job).
from entropy_rl.study import table_job

table_job.table_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
