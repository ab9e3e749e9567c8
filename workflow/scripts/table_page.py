# A table's page in `snakemake --report` (entropy_rl.study.table_job).
from entropy_rl.study import table_job

table_job.table_page_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
