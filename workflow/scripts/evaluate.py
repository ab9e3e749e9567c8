# The final policy on every benchmark: graded samples per benchmark and their summary. The rule's
# `backend` param picks the scale's evaluation (entropy_rl.mini.evaluate: a Hugging Face model;
# entropy_rl.paper.evaluate: a vLLM engine); both have the entry evaluate_benchmarks.
import importlib
import time
from pathlib import Path

import pandas as pd
from entropy_rl.core import atomic, formats, logs, pass_rates, reward


def main(snakemake):
    p = snakemake.params
    # A vLLM engine (paper scale): its engine core's output and errors in the log too (core.logs.tee_output).
    log = logs.setup(snakemake.log[0], snakemake.threads, engines=p.backend == "paper")
    backend = importlib.import_module(f"entropy_rl.{p.backend}.evaluate")
    frames = {Path(path).stem: formats.load_verl_parquet(path) for path in snakemake.input.benchmarks}
    rows, tokens, started = [], 0, time.perf_counter()
    # The rule lists the samples files in the order of its benchmarks.
    for (name, samples), out_path in zip(
        backend.evaluate_benchmarks(snakemake.input.model, frames, p), snakemake.output.samples
    ):
        samples.insert(0, "benchmark", name)
        tokens += int(samples["response_tokens"].sum()) if "response_tokens" in samples else 0
        atomic.to_parquet(samples, out_path)
        summary = pass_rates.summarize(samples, p.pass_k)
        summary.update(reward.sandbox_columns())  # code benchmarks: programs run, and those stopped for a limit
        rows.append({"benchmark": name, "temperature": p.protocols[name]["temperature"], **summary})
        log.info("%s %s", name, summary)
    logs.log_throughput(log, tokens, time.perf_counter() - started)  # generation and grading, for the pilot's report
    atomic.to_parquet(pd.DataFrame(rows), snakemake.output.summary)


# vLLM may start its engine core or tensor-parallel workers with the spawn start method, which imports this
# file again in each new process: only the process Snakemake started may run the job.
if __name__ == "__main__":
    main(snakemake)  # noqa: F821 (Snakemake's preamble defines it)
