# One power-sampling-study method: n graded answers to each problem, with their base-model likelihood
# and token cost. The rule's `backend` param (the scale) and the method's kind pick the sampler
# (core.power_methods.sampler_module: entropy_rl.mini.power_sampling, Hugging Face models; at paper scale
# entropy_rl.paper.power_sampling or .power_samplers, vLLM engines on the base model's GPUs); each has the
# entry sample_benchmarks.
import importlib
import time
from pathlib import Path

import pandas as pd
from entropy_rl.core import atomic, formats, logs, power_methods


def main(snakemake):
    p = snakemake.params
    # vLLM engines (paper scale): their engine cores' output and errors in the log too (core.logs.tee_output).
    log = logs.setup(snakemake.log[0], snakemake.threads, engines=p.backend == "paper")
    backend = importlib.import_module(f"entropy_rl.{power_methods.sampler_module(p.backend, p.method['kind'])}")
    frames = {Path(path).stem: formats.load_verl_parquet(path).head(p.problems) for path in snakemake.input.benchmarks}
    log.info("method %s: %s", snakemake.wildcards.method, p.method)
    answers, started = [], time.perf_counter()
    for name, samples in backend.sample_benchmarks(snakemake.input.base, snakemake.input.policy, frames, p):
        samples.insert(0, "benchmark", name)
        log.info(
            "%s: accuracy %.3f, %.1f tokens drawn per answer",
            name,
            samples["correct"].mean(),
            samples["drawn_tokens"].mean(),
        )
        answers.append(samples)
    drawn = sum(int(a["drawn_tokens"].sum()) for a in answers)
    logs.log_throughput(log, drawn, time.perf_counter() - started)  # for the pilot's report
    atomic.to_parquet(pd.concat(answers, ignore_index=True), snakemake.output[0])


# vLLM starts its engine core (and, with tensor parallelism, its workers) with the spawn start method, which
# imports this file again in each new process: only the process Snakemake started may run the job.
if __name__ == "__main__":
    main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
