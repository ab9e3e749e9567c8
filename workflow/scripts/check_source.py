from entropy_rl.paper import data

data.check_source_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
