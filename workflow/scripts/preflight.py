from entropy_rl.paper import preflight

preflight.preflight_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
