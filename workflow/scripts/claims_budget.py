# What each claim of the ledger costs to judge at this scale, and what budgets buy (entropy_rl.pipeline.claims_budget).
from entropy_rl.pipeline import claims_budget

claims_budget.main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
