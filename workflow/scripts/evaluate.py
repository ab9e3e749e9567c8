# The final policy on every benchmark: graded samples per benchmark and their summary (entropy_rl.core.evaluate_job).
from entropy_rl.core import evaluate_job

# vLLM may start its engine core or tensor-parallel workers with the spawn start method, which imports this
# file again in each new process: only the process Snakemake started may run the job.
if __name__ == "__main__":
    evaluate_job.main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
