import glob
import os
import subprocess
import sys
from pathlib import Path

import entropy_rl
from entropy_rl.core import atomic, logs, modules, resume
from entropy_rl.paper import launch, verl_checkpoints, verl_metrics

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
# A checkpoint saved but never logged (a pre-emption between verl's save and its log) is set aside: resumed from, its
# step would never be logged.
try:
    prepared = verl_checkpoints.prepare_launch(ckpt_dir, tensorboard=prime)
except verl_checkpoints.RepeatedLoss as err:  # the same step lost again and again: stop, not retrain it once more
    sys.exit(str(err))
verl_log = prepared.log
# What verl will load: the marker's step after the preparation, not whether checkpoints of this run were kept
log.info("%s; this launch logs to %s", verl_checkpoints.launch_words(resuming, prepared.resume), verl_log)
# verl's workers import entropy_rl (the covariance loss plugin, the reward): put the package on their path.
pythonpath = os.pathsep.join(filter(None, [str(entropy_rl.WORKFLOW_DIR), os.environ.get("PYTHONPATH")]))
env = {**os.environ, "TENSORBOARD_DIR" if prime else "VERL_FILE_LOGGER_PATH": str(verl_log), "PYTHONPATH": pythonpath}
env = env if prime else launch.verl_env(env)
command = launch.bind(snakemake.params.command, "results")
log.info("command: %s", " ".join(command))
nodes = launch.allocation_nodes()
# The pilot's pre-emption (spec interrupt_at_step): verl stopped by SIGTERM once that step is saved, then launched
# again, which resumes from the checkpoint as a requeued job does.
interrupt = snakemake.params.spec.get("interrupt_at_step")
if interrupt and len(nodes) == 1 and launch.saved_step(ckpt_dir) < interrupt:
    first_log = verl_log
    code = launch.run_until_saved(command, env, ckpt_dir, interrupt,
                                  logged=lambda: prime or verl_metrics.logged_step(first_log) >= interrupt)  # fmt: skip
    if launch.saved_step(ckpt_dir) < interrupt:
        sys.exit(f"verl exited with {code} before saving step {interrupt}; checkpoints in {ckpt_dir} are kept")
    saved = launch.saved_step(ckpt_dir)
    prepared = verl_checkpoints.prepare_launch(ckpt_dir, tensorboard=prime)
    verl_log = prepared.log
    env["TENSORBOARD_DIR" if prime else "VERL_FILE_LOGGER_PATH"] = str(verl_log)
    log.info("pre-emption: verl stopped by SIGTERM (exit %s) after saving step %d; relaunched, %s and logs to %s",
             code, saved, verl_checkpoints.launch_words(True, prepared.resume), verl_log)  # fmt: skip
code = launch.run(command, nodes, snakemake.params.gpus_per_node, env)
if code != 0:
    sys.exit(f"verl exited with {code}; checkpoints in {ckpt_dir} are kept and a rerun resumes from the last")
table = verl_metrics.to_metrics_table(verl_metrics.read_attempts(ckpt_dir), snakemake.params.benchmarks)
steps = sorted(glob.glob(str(ckpt_dir / "global_step_*")), key=lambda p: int(p.rsplit("_", 1)[1]))
with atomic.output(snakemake.output.final) as tmp:
    subprocess.run([sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp",
                    "--local_dir", f"{steps[-1]}/actor", "--target_dir", str(tmp)], check=True)  # fmt: skip
log.info("merged %s into %s", steps[-1], snakemake.output.final)
atomic.to_parquet(table, snakemake.output.metrics)
