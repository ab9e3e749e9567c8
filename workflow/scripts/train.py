import json

from entropy_rl import logs, trainer
from pathlib import Path

log = logs.setup(snakemake.log[0], snakemake.threads)
spec = snakemake.params.spec
log.info("run spec %s", json.dumps(spec))
benchmarks = {Path(p).stem: p for p in snakemake.input.benchmarks}
val_sets = trainer.validation_sets(benchmarks, spec["val_protocol"], spec["val_size"])
run_dir = Path(snakemake.output.final).parent
frame = trainer.train(spec, snakemake.input.model, snakemake.input.train, val_sets, run_dir)
frame.to_parquet(snakemake.output.metrics)
