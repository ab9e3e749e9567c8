from entropy_rl import atomic, data, logs

log = logs.setup(snakemake.log[0])
frames = [data.load_verl_parquet(p) for p in snakemake.input.benchmarks]
train = data.build_train_set(snakemake.params.benchmarks, snakemake.params.spec, snakemake.params.seed, frames)
atomic.to_parquet(train, snakemake.output[0])
log.info("%d prompts from %s", len(train), snakemake.params.spec["from"])
