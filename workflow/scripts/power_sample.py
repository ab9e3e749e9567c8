# One power-sampling-study method: n graded answers to each problem (entropy_rl.core.power.sample_job).
from entropy_rl.core.power import sample_job

# vLLM starts its engine core (and, with tensor parallelism, its workers) with the spawn start method, which
# imports this file again in each new process: only the process Snakemake started may run the job.
if __name__ == "__main__":
    sample_job.main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
