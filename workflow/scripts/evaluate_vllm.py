from pathlib import Path

import pandas as pd
from vllm import LLM

from entropy_rl import atomic, data, evaluate, logs

log = logs.setup(snakemake.log[0], snakemake.threads)
p = snakemake.params
# One engine load for every benchmark of this checkpoint.
llm = LLM(model=snakemake.input.model, tensor_parallel_size=p.tensor_parallel, seed=p.seed)
rows = []
for bench_path, out_path in zip(snakemake.input.benchmarks, snakemake.output.samples):
    name = Path(bench_path).stem
    proto = p.protocols[name]
    samples = evaluate.vllm_samples(llm, data.load_verl_parquet(bench_path), proto, p.max_new_tokens, p.seed)
    samples.insert(0, "benchmark", name)
    atomic.to_parquet(samples, out_path)
    summary = evaluate.summarize(samples, p.pass_k)
    rows.append({"benchmark": name, "temperature": proto["temperature"], **summary})
    log.info("%s %s", name, summary)
atomic.to_parquet(pd.DataFrame(rows), snakemake.output.summary)
