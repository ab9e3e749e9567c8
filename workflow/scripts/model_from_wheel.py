from entropy_rl.paper import wheel_model

wheel_model.main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
