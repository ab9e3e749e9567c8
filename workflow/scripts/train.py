from entropy_rl.core import warm_start

# A local study's job goes on in a warm interpreter that has already imported what follows (core.warm_start).
warm_start.hand_over()

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from entropy_rl.core import logs  # noqa: E402
from entropy_rl.mini import trainer  # noqa: E402

log = logs.setup(snakemake.log[0], snakemake.threads)
spec = snakemake.params.spec
log.info("run spec %s", json.dumps(spec))
benchmarks = {Path(p).stem: p for p in snakemake.input.benchmarks}
val_sets = trainer.validation_sets(benchmarks, spec["val_protocol"], spec["val_size"])
run_dir = Path(snakemake.output.final).parent
assert Path(snakemake.output.metrics) == run_dir / "metrics.parquet"
# A rerun after a kill resumes from run_dir/checkpoints when the spec and this code are unchanged.
trainer.train(spec, snakemake.input.model, snakemake.input.train, val_sets, run_dir)
