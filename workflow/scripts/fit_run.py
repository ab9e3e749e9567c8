from entropy_rl.core import warm_start

# A local study's job goes on in a warm interpreter that has already imported what follows (core.warm_start).
warm_start.hand_over()

import json  # noqa: E402

import pandas as pd  # noqa: E402
from entropy_rl.core import atomic, logs  # noqa: E402
from entropy_rl.study import analysis  # noqa: E402

log = logs.setup(snakemake.log[0])
metrics = pd.read_parquet(snakemake.input.metrics)
result = {"run": snakemake.wildcards.run, "fit": analysis.fit_run(metrics)}
early = analysis.early_prediction(metrics, snakemake.params.early_fit_steps)
result["early_prediction"] = {k: v for k, v in early.items() if k != "points"}
result["early_prediction_points"] = early["points"]
atomic.write_text(snakemake.output[0], json.dumps(result, indent=2, default=float))
log.info("fit %s", result["fit"])
