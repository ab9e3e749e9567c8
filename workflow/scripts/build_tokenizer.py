from entropy_rl.mini import tokenizer

tokenizer.main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
