from entropy_rl.core import logs
from entropy_rl.paper.cost import pilot_measures, pilot_report

log = logs.setup(snakemake.log[0])
stages = [pilot_measures.Stage(**stage) for stage in snakemake.params.stages]
out = snakemake.output
speed = snakemake.input.speed[0] if snakemake.input.speed else None
summary = pilot_report.write(stages, snakemake.params.scope, out.md, out.html, out.estimate, speed=speed)
log.info(
    "pilot: %s stages passed; measured MFUs: rollout %.3f, training %.3f",
    summary["pilot_stages"],
    summary["rollout_mfu"],
    summary["train_mfu"],
)
