"""The evaluate rules' job: the final policy on every benchmark, graded samples per benchmark and their summary.

The rule's ``backend`` param (the scale) picks its evaluation from the registry (``backends.EVALUATIONS``:
``entropy_rl.mini.evaluate``, a Hugging Face model; ``entropy_rl.paper.evaluate``, a vLLM engine); both have the entry
``evaluate_benchmarks``, which takes the rule's other params as one ``core.evaluation.Evaluation``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from . import atomic, backends, formats, logs, pass_rates, reward
from .evaluation import Evaluation


def evaluate(
    scale: str,
    evaluation: Evaluation,
    model: str,
    benchmarks: list[str],
    samples_out: list[str],
    summary_out: str,
    log,
) -> None:
    """Each benchmark of ``benchmarks`` (parquet files) sampled by ``scale``'s evaluation of ``model`` and graded, its
    samples written to the file of ``samples_out`` at its place, and every benchmark's summary to ``summary_out``."""
    backend = backends.evaluation(scale)
    frames = {Path(path).stem: formats.load_verl_parquet(path) for path in benchmarks}
    rows, tokens, started = [], 0, time.perf_counter()
    # The rule lists the samples files in the order of its benchmarks.
    for (name, samples), out_path in zip(backend.evaluate_benchmarks(model, frames, evaluation), samples_out):
        samples.insert(0, "benchmark", name)
        tokens += int(samples["response_tokens"].sum()) if "response_tokens" in samples else 0
        atomic.to_parquet(samples, out_path)
        summary = pass_rates.summarize(samples, evaluation.pass_k)
        summary.update(reward.sandbox_columns())  # code benchmarks: programs run, and those stopped for a limit
        rows.append({"benchmark": name, "temperature": evaluation.protocols[name].temperature, **summary})
        log.info("%s %s", name, summary)
    logs.log_throughput(log, tokens, time.perf_counter() - started)  # generation and grading, for the pilot's report
    atomic.to_parquet(pd.DataFrame(rows), summary_out)


def main(snakemake) -> None:
    p = snakemake.params
    evaluation = Evaluation.from_params(p)
    # A vLLM engine (paper scale): its engine core's output and errors in the log too (core.logs.tee_output).
    log = logs.setup(snakemake.log[0], snakemake.threads, engines=evaluation.engines is not None)
    inputs, out = snakemake.input, snakemake.output
    evaluate(p.backend, evaluation, inputs.model, inputs.benchmarks, out.samples, out.summary, log)
