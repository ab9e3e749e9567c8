import glob
import os
import subprocess
import sys
from pathlib import Path

from entropy_rl import launch, logs, verl_metrics

log = logs.setup(snakemake.log[0])
run_dir = Path(snakemake.output.metrics).parent
verl_log = run_dir / "verl_log.jsonl"
# verl's workers import entropy_rl (the covariance loss plugin, the reward): put the package on their path.
package_root = os.path.dirname(os.path.dirname(os.path.abspath(snakemake.input.code[0])))
pythonpath = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
env = {**os.environ, "VERL_FILE_LOGGER_PATH": str(verl_log), "PYTHONPATH": pythonpath}
log.info("command: %s", " ".join(snakemake.params.command))
code = launch.run(snakemake.params.command, launch.allocation_nodes(), snakemake.params.gpus_per_node, env)
if code != 0:
    sys.exit(f"verl exited with {code}; checkpoints in {run_dir / 'checkpoints'} are kept and a rerun resumes from the last")
verl_metrics.to_metrics_table(verl_metrics.read_jsonl(verl_log), snakemake.params.benchmarks).to_parquet(snakemake.output.metrics)
steps = sorted(glob.glob(str(run_dir / "checkpoints" / "global_step_*")), key=lambda p: int(p.rsplit("_", 1)[1]))
subprocess.run([sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp",
                "--local_dir", f"{steps[-1]}/actor", "--target_dir", snakemake.output.final], check=True)  # fmt: skip
log.info("merged %s into %s", steps[-1], snakemake.output.final)
