from entropy_rl.paper import data

data.prepare_train_set_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
