"""The evaluate rules' job: the final policy on every benchmark, graded samples per benchmark and their summary.

The rule's ``backend`` param picks the scale's evaluation (``entropy_rl.mini.evaluate``: a Hugging Face model;
``entropy_rl.paper.evaluate``: a vLLM engine); both have the entry ``evaluate_benchmarks``.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path

import pandas as pd

from . import atomic, formats, logs, pass_rates, reward


def evaluate(params, model: str, benchmarks: list[str], samples_out: list[str], summary_out: str, log) -> None:
    """Each benchmark of ``benchmarks`` (parquet files) sampled by ``params.backend``'s evaluation of ``model`` and
    graded, its samples written to the file of ``samples_out`` at its place, and every benchmark's summary to
    ``summary_out``."""
    backend = importlib.import_module(f"entropy_rl.{params.backend}.evaluate")
    frames = {Path(path).stem: formats.load_verl_parquet(path) for path in benchmarks}
    rows, tokens, started = [], 0, time.perf_counter()
    # The rule lists the samples files in the order of its benchmarks.
    for (name, samples), out_path in zip(backend.evaluate_benchmarks(model, frames, params), samples_out):
        samples.insert(0, "benchmark", name)
        tokens += int(samples["response_tokens"].sum()) if "response_tokens" in samples else 0
        atomic.to_parquet(samples, out_path)
        summary = pass_rates.summarize(samples, params.pass_k)
        summary.update(reward.sandbox_columns())  # code benchmarks: programs run, and those stopped for a limit
        rows.append({"benchmark": name, "temperature": params.protocols[name]["temperature"], **summary})
        log.info("%s %s", name, summary)
    logs.log_throughput(log, tokens, time.perf_counter() - started)  # generation and grading, for the pilot's report
    atomic.to_parquet(pd.DataFrame(rows), summary_out)


def main(snakemake) -> None:
    p = snakemake.params
    # A vLLM engine (paper scale): its engine core's output and errors in the log too (core.logs.tee_output).
    log = logs.setup(snakemake.log[0], snakemake.threads, engines=p.backend == "paper")
    inputs, out = snakemake.input, snakemake.output
    evaluate(p, inputs.model, inputs.benchmarks, out.samples, out.summary, log)
