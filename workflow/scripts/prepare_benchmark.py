from entropy_rl.core import atomic, logs
from entropy_rl.paper import data as paper_data

log = logs.setup(snakemake.log[0])
p = snakemake.params
frame = paper_data.build_part(snakemake.input.source, p.part, p.part_name, p.templates, p.seed, data_source=snakemake.wildcards.benchmark)
atomic.to_parquet(frame, snakemake.output[0])
log.info("%s: %d problems", snakemake.wildcards.benchmark, len(frame))
