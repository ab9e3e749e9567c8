from entropy_rl.core import atomic, formats, logs

log = logs.setup(snakemake.log[0])
frame = formats.load_verl_parquet(snakemake.input[0]).head(snakemake.params.problems)
atomic.to_parquet(frame, snakemake.output[0])
log.info("the first %d problems of %s", len(frame), snakemake.input[0])
