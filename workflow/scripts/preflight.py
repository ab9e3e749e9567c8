# One run's preflight (or the power study's model): fail with every problem, one line each.
import sys

from entropy_rl.core import atomic, logs
from entropy_rl.paper import preflight

log = logs.setup(snakemake.log[0])
scope = snakemake.params.scope
run = snakemake.wildcards.get("run")
if run:
    problems = preflight.run_problems(scope, run, "results")
else:
    problems = preflight.model_problems(scope, scope["power_sampling"]["model"], snakemake.input.model)
what = run or "power sampling"
for p in problems:
    log.error("%s: %s", what, p)
if problems:
    sys.exit(f"preflight of {what} found {len(problems)} problem(s):\n" + "\n".join(f"  - {p}" for p in problems))
atomic.write_text(snakemake.output[0], f"preflight of {what}: no problem found\n")
log.info("preflight of %s: no problem found", what)
