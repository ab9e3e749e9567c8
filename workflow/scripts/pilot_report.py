from entropy_rl.core import logs
from entropy_rl.paper import pilot_report

log = logs.setup(snakemake.log[0])
stages = [pilot_report.Stage(**stage) for stage in snakemake.params.stages]
out = snakemake.output
summary = pilot_report.write(stages, snakemake.params.scope, out.md, out.html, out.estimate)
log.info(
    "pilot: %s stages passed; measured MFUs: rollout %.3f, training %.3f",
    summary["pilot_stages"],
    summary["rollout_mfu"],
    summary["train_mfu"],
)
