from entropy_rl.core import logs
from entropy_rl.mini import data

log = logs.setup(snakemake.log[0])
paths = data.prepare_mini_data(snakemake.params.spec, "results/data")
log.info("wrote %s", sorted(str(p) for p in paths.values()))
