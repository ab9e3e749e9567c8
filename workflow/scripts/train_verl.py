import os
import subprocess
import sys
from pathlib import Path

import entropy_rl
from entropy_rl.core import atomic, logs, modules, resume
from entropy_rl.paper import job_time, launch, run_command, saves, train_job, verl_checkpoints, verl_metrics

log = logs.setup(snakemake.log[0], engines=True)  # verl's driver, its Ray workers and the merger print here too
run_dir = Path(snakemake.output.metrics).parent
ckpt_dir = run_dir / "checkpoints"
# verl resumes from ckpt_dir (resume_mode=auto) only when it holds this run's trajectory: checkpoints
# of other settings (the spec, or verl's own in the command), or of other reward or loss code, are moved aside
# and training starts afresh.
trajectory = {**snakemake.params.spec, "command": launch.trajectory_command(snakemake.params.command)}
trainer = launch.trainer(snakemake.params.spec)  # its own trainer's code only: PRIME's never loads the loss plugin
fingerprint = resume.fingerprint(trajectory, modules.closure(*launch.TRAINER_MODULES[trainer]))
earlier = resume.fingerprint(trajectory, modules.closure(*launch.FINGERPRINT_BEFORE_TRAINER_MODULES))
resuming = resume.claim(ckpt_dir, fingerprint, earlier=[earlier])
# PRIME runs on verl 0.4.1, which logs to TensorBoard only; verl 0.9.1 runs write verl's file log.
prime = trainer == "prime"
# Each launch: a checkpoint saved but never logged (a pre-emption between verl's save and its log) set aside, since
# resumed from, its step would never be logged; a marker that names no whole save mended, deleting nothing; the saves
# beyond the run's newest KEEP_CHECKPOINTS (earlier launches', which verl's retention forgets) removed.
keep, steps = run_command.KEEP_CHECKPOINTS, snakemake.params.spec["steps"]
# verl's workers import entropy_rl (the covariance loss plugin, the reward): put the package on their path.
pythonpath = os.pathsep.join(filter(None, [str(entropy_rl.WORKFLOW_DIR), os.environ.get("PYTHONPATH")]))
env = {**os.environ, "PYTHONPATH": pythonpath}
env = env if prime else launch.verl_env(env)
log_env = "TENSORBOARD_DIR" if prime else "VERL_FILE_LOGGER_PATH"
command = launch.bind(snakemake.params.command, "results")
log.info("command: %s", " ".join(command))
nodes = launch.allocation_nodes()
# The pilot's pre-emption (spec interrupt_at_step): verl stopped by SIGTERM once that step is saved, then launched
# again, which resumes from the checkpoint as a requeued job does.
interrupt = snakemake.params.spec.get("interrupt_at_step")
if interrupt and len(nodes) == 1 and saves.completed_step(ckpt_dir, trainer) < interrupt:
    try:
        prepared = verl_checkpoints.prepare_launch(ckpt_dir, trainer, keep, tensorboard=prime)
    except verl_checkpoints.RepeatedLoss as err:
        sys.exit(str(err))
    log.info("%s; this launch logs to %s", verl_checkpoints.launch_words(resuming, prepared.resume), prepared.log)
    first_log = prepared.log
    logged = train_job.TensorBoardLogged(first_log) if prime else (lambda step: verl_metrics.logged_step(first_log) >= step)
    code = launch.run_until_saved(command, {**env, log_env: str(first_log)}, ckpt_dir, interrupt, trainer=trainer,
                                  logged=lambda: logged(interrupt))  # fmt: skip
    if saves.completed_step(ckpt_dir, trainer) < interrupt:
        sys.exit(f"verl exited with {code} before saving step {interrupt}; checkpoints in {ckpt_dir} are kept")
    log.info("pre-emption: verl stopped by SIGTERM (exit %s) after saving step %d; relaunched (below)", code,
             saves.completed_step(ckpt_dir, trainer))  # fmt: skip
# A launch within the job's time limit (train_job, job_time): a run longer than the site's longest job goes on in the
# next job, which Snakemake submits again (the rule's retries) and which resumes from the last whole save.
refused = train_job.refusal(ckpt_dir)
if refused:
    log.info("%s", refused[1])
    sys.exit(refused[0] if refused[0] == job_time.CONTINUE else refused[1])
try:
    ended = train_job.launch(command, env, ckpt_dir, trainer=trainer, keep=keep, steps=steps, log_env=log_env,
                             tensorboard=prime, nodes=nodes, gpus_per_node=snakemake.params.gpus_per_node,
                             runtime_minutes=snakemake.resources.get("runtime"), kept=resuming)  # fmt: skip
except verl_checkpoints.RepeatedLoss as err:  # the same step lost again and again: stop, not retrain it once more
    sys.exit(str(err))
status, why = ended.verdict()
train_job.record(ckpt_dir, ended, status, why)
if status:
    log.info("%s", why)
    sys.exit(status if status == job_time.CONTINUE else f"{why} ({ckpt_dir})")
table = verl_metrics.to_metrics_table(verl_metrics.read_attempts(ckpt_dir), snakemake.params.benchmarks)
last = ckpt_dir / f"global_step_{ended.reached}"
with atomic.output(snakemake.output.final) as tmp:
    subprocess.run([sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp",
                    "--local_dir", f"{last}/actor", "--target_dir", str(tmp)], check=True)  # fmt: skip
log.info("merged %s into %s", last, snakemake.output.final)
atomic.to_parquet(table, snakemake.output.metrics)
