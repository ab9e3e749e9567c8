# Paper scale: one power-sampling-study method on one GPU node (vLLM). An RL checkpoint's answers are
# scored by a second engine holding the base model; the two share the node's memory.
from pathlib import Path

import pandas as pd
from transformers import AutoTokenizer

from entropy_rl import atomic, data, logs, power_sampling

log = logs.setup(snakemake.log[0], snakemake.threads)
p = snakemake.params
tokenizer = AutoTokenizer.from_pretrained(snakemake.input.base)
stop_ids = power_sampling.stop_ids(snakemake.input.base, tokenizer)
two = snakemake.input.policy != snakemake.input.base
engine = lambda path: power_sampling.vllm_engine(  # noqa: E731
    path, p.tensor_parallel, p.seed, p.max_model_len, memory=0.42 if two else 0.85
)
llm = engine(snakemake.input.policy)
base = engine(snakemake.input.base) if two else llm
log.info("method %s: %s; stop tokens %s", snakemake.wildcards.method, p.method, stop_ids)
frames = []
for path in snakemake.input.benchmarks:
    frame = data.load_verl_parquet(path).head(p.problems)
    prompts, answers = data.prompts_and_answers(frame)
    styles = [rm["style"] for rm in frame["reward_model"]]
    samples = power_sampling.sample_method_vllm(
        llm, base, tokenizer, prompts, answers, styles, p.method, p.n, p.max_new_tokens, p.seed, stop_ids
    )
    samples.insert(0, "benchmark", Path(path).stem)
    log.info("%s: accuracy %.3f, %.1f tokens drawn per answer", Path(path).stem, samples["correct"].mean(), samples["drawn_tokens"].mean())
    frames.append(samples)
atomic.to_parquet(pd.concat(frames, ignore_index=True), snakemake.output[0])
