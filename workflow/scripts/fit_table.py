import json

from entropy_rl import analysis, logs

log = logs.setup(snakemake.log[0])
fits = {}
for path in snakemake.input.fits:
    with open(path) as fh:
        result = json.load(fh)
    fits[result["run"]] = {**result["fit"], **{f"early_{k}": v for k, v in result["early_prediction"].items() if not isinstance(v, dict)}}
table = analysis.fits_table(fits)
table.to_csv(snakemake.output.csv)
table.to_parquet(snakemake.output.parquet)
