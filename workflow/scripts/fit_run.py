from entropy_rl.core import warm_start

# A local study's job goes on in a warm interpreter that has already imported what follows (core.warm_start).
warm_start.hand_over()

from entropy_rl.study import fit_job  # noqa: E402

fit_job.fit_run_main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
