# A table's page in `snakemake --report` (entropy_rl.study.pages): its CSV, written by the table's own rule, with its
# caption.
import pandas as pd

from entropy_rl.core import atomic, logs
from entropy_rl.study import pages

log = logs.setup(snakemake.log[0])
table = pd.read_csv(snakemake.input.csv, index_col=0)
page = pages.table_page(table, snakemake.params.title, snakemake.params.caption)
atomic.write_text(snakemake.output.html, page)
log.info("%s: %d rows, %d columns", snakemake.output.html, *table.shape)
