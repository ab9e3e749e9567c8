import json

from entropy_rl.core import atomic, logs
from entropy_rl.study import analysis

log = logs.setup(snakemake.log[0])
fits = {}
for path in snakemake.input.fits:
    with open(path) as fh:
        result = json.load(fh)
    fits[result["run"]] = {**result["fit"], **{f"early_{k}": v for k, v in result["early_prediction"].items() if not isinstance(v, dict)}}
table = analysis.fits_table(fits)
atomic.write_text(snakemake.output.csv, table.to_csv())
atomic.to_parquet(table, snakemake.output.parquet)
