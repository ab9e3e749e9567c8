from entropy_rl.paper import gym_source

gym_source.main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
