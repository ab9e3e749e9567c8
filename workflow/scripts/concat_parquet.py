import pandas as pd
from entropy_rl.core import atomic, logs

log = logs.setup(snakemake.log[0])
frame = pd.concat([pd.read_parquet(path) for path in snakemake.input], ignore_index=True)
atomic.to_parquet(frame, snakemake.output[0])
log.info("%d rows from %d files", len(frame), len(snakemake.input))
