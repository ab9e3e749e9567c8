# One preflight, by its rule: a run's training (its command, the rollout engine, the data), the engine of a run's
# evaluation, or the power study's model against its engines. Fails with every problem, one line each.
import sys

from entropy_rl.core import atomic, logs
from entropy_rl.paper import preflight

log = logs.setup(snakemake.log[0])
p = snakemake.params
run = snakemake.wildcards.get("run")
if snakemake.rule == "preflight":
    what, problems = run, preflight.training_problems(run, p.command, p.spec, p.rollout, p.benchmarks, "results")
elif snakemake.rule == "preflight_eval":
    what, problems = f"{run}'s evaluation", preflight.engine_problems(snakemake.input.model, p.engines)
else:
    what = "power sampling"
    problems = preflight.model_problems(p.scope, p.scope["power_sampling"]["model"], snakemake.input.model, kinds=("power",))
for problem in problems:
    log.error("%s: %s", what, problem)
if problems:
    sys.exit(f"preflight of {what} found {len(problems)} problem(s):\n" + "\n".join(f"  - {x}" for x in problems))
atomic.write_text(snakemake.output[0], f"preflight of {what}: no problem found\n")
log.info("preflight of %s: no problem found", what)
