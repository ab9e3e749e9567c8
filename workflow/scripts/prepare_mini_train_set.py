from entropy_rl.mini import data

data.prepare_mini_train_set_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
