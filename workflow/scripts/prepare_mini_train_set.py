from entropy_rl.core import atomic, formats, logs
from entropy_rl.mini import data

log = logs.setup(snakemake.log[0])
frames = [formats.load_verl_parquet(p) for p in snakemake.input.benchmarks]
train = data.build_train_set(snakemake.params.benchmarks, snakemake.params.spec, snakemake.params.seed, frames)
atomic.to_parquet(train, snakemake.output[0])
log.info("%d prompts from %s", len(train), snakemake.params.spec["from"])
