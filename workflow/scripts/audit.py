from entropy_rl.study import audit

audit.main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
