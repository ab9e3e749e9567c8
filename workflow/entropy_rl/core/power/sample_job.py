"""The power-sampling rules' job: one method of the power-sampling study, n graded answers to each problem with their
base-model likelihood and token cost.

The rule's ``backend`` param (the scale) and the method's kind pick the sampler from the registry
(``backends.SAMPLERS``: ``entropy_rl.mini.power_sampling``, Hugging Face models; at paper scale
``entropy_rl.paper.power_sampling`` or ``.power_samplers``, vLLM engines on the base model's GPUs); each has the entry
``sample_benchmarks``, which takes the rule's other params as one ``methods.Sampler``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from .. import atomic, backends, formats, logs
from .methods import Sampler


def sample(
    scale: str, sampler: Sampler, method: str, base: str, policy: str, benchmarks: list[str], out: str, log
) -> None:
    """The answers of ``method`` (its settings: ``sampler``) to the first ``sampler.problems`` problems of each of
    ``benchmarks``, drawn from ``policy`` by ``scale``'s sampler of its kind and scored by ``base``, written to
    ``out``."""
    backend = backends.sampler(scale, sampler.kind)
    frames = {Path(path).stem: formats.load_verl_parquet(path).head(sampler.problems) for path in benchmarks}
    log.info("method %s: %s", method, sampler.method)
    answers, started = [], time.perf_counter()
    for name, samples in backend.sample_benchmarks(base, policy, frames, sampler):
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
    atomic.to_parquet(pd.concat(answers, ignore_index=True), out)


def main(snakemake) -> None:
    p = snakemake.params
    sampler = Sampler.from_params(p)
    # vLLM engines (paper scale): their engine cores' output and errors in the log too (core.logs.tee_output).
    log = logs.setup(snakemake.log[0], snakemake.threads, engines=sampler.engines is not None)
    inputs, method = snakemake.input, snakemake.wildcards.method
    sample(p.backend, sampler, method, inputs.base, inputs.policy, inputs.benchmarks, snakemake.output[0], log)
