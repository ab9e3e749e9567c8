from entropy_rl.study import fit_law

fit_law.fit_law_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
