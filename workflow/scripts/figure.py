# One script for every figure, the paper's and the power-sampling study's (entropy_rl.study.figure_job).
from entropy_rl.study import figure_job

figure_job.main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
