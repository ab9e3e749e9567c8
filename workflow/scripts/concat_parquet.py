from entropy_rl.paper import data

data.validation_set_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
