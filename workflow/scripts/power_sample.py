from pathlib import Path

import pandas as pd

from entropy_rl import atomic, data, logs, models, power_sampling

log = logs.setup(snakemake.log[0], snakemake.threads)
p = snakemake.params
base, tokenizer = models.load(snakemake.input.base)
policy = base if snakemake.input.policy == snakemake.input.base else models.load(snakemake.input.policy)[0]
log.info("method %s: %s", snakemake.wildcards.method, p.method)
frames = []
for path in snakemake.input.benchmarks:
    prompts, answers = data.prompts_and_answers(data.load_verl_parquet(path).head(p.problems))
    frame = power_sampling.sample_method(
        policy, tokenizer, base, prompts, answers, p.method, p.n, p.max_new_tokens, p.seed
    )
    frame.insert(0, "benchmark", Path(path).stem)
    log.info(
        "%s: accuracy %.3f, %.1f tokens drawn per answer",
        Path(path).stem,
        frame["correct"].mean(),
        frame["drawn_tokens"].mean(),
    )
    frames.append(frame)
atomic.to_parquet(pd.concat(frames, ignore_index=True), snakemake.output[0])
