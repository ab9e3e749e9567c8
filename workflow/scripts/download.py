from entropy_rl.paper import hub

hub.main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
