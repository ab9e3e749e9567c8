from pathlib import Path

import pandas as pd
import torch

from entropy_rl import atomic, data, evaluate, logs, models

log = logs.setup(snakemake.log[0], snakemake.threads)
model, tok = models.load(snakemake.input.model)  # one load for all benchmarks
rows = []
for bench_path, out_path in zip(snakemake.input.benchmarks, snakemake.output.samples):
    name = Path(bench_path).stem
    proto = snakemake.params.protocols[name]
    prompts, answers = data.prompts_and_answers(data.load_verl_parquet(bench_path))
    torch.manual_seed(snakemake.params.seed)  # sampled benchmarks draw the same samples on every run
    samples = evaluate.sample_benchmark(model, tok, prompts, answers, proto["temperature"], proto["n"], snakemake.params.max_new_tokens)
    samples.insert(0, "benchmark", name)
    atomic.to_parquet(samples, out_path)
    summary = evaluate.summarize(samples, snakemake.params.pass_k)
    rows.append({"benchmark": name, "temperature": proto["temperature"], **summary})
    log.info("%s %s", name, summary)
atomic.to_parquet(pd.DataFrame(rows), snakemake.output.summary)
