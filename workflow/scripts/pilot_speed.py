import json
import os
import sys
from pathlib import Path

from entropy_rl.core import atomic, logs
from entropy_rl.paper import launch
from entropy_rl.paper.cost import speed

log = logs.setup(snakemake.log[0], engines=True)
scope = snakemake.params.scope
work = Path(snakemake.output[0]).parent / "speed"
log.info("speed: %s, each size's update and rollout in processes of their own", ", ".join(scope["pilot"]["speed"]["sizes"]))
# Each size's probes in processes of their own (verl's platform picked afresh, the device emptied between sizes), their
# output on this job's stdout, which is its log (engines=True).
result = speed.measure(scope, str(Path("results").resolve()), snakemake.input.tokenizer, work.resolve(), sys.executable,
                       launch.verl_env(dict(os.environ)))  # fmt: skip
for row in speed.table(result):
    log.info("speed: %s", " | ".join(f"{h}: {v}" for h, v in zip(speed.HEADER, row)))
atomic.write_text(snakemake.output[0], json.dumps(result, indent=2) + "\n")
