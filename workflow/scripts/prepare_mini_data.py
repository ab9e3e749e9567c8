from entropy_rl.mini import data

data.prepare_mini_data_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
