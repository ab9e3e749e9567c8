# Paper scale: one power-sampling-study method on the base model's tensor-parallel GPUs (vLLM). An RL
# checkpoint's answers are scored by a second engine holding the base model; the two share the GPUs' memory.
from pathlib import Path

import pandas as pd
from transformers import AutoTokenizer

from entropy_rl import atomic, data, logs, power_sampling, prompt_format

log = logs.setup(snakemake.log[0], snakemake.threads)
p = snakemake.params
tokenizer = AutoTokenizer.from_pretrained(snakemake.input.base)
# The base model's prompt format; its RL checkpoints were trained with the same one.
template = prompt_format.chat_template(p.chat_template, tokenizer)
stop_ids = power_sampling.stop_ids(snakemake.input.base, tokenizer)
problems = {}
for path in snakemake.input.benchmarks:
    frame = data.load_verl_parquet(path).head(p.problems)
    prompts, answers = data.prompts_and_answers(frame)
    problems[Path(path).stem] = (prompts, answers, [rm["style"] for rm in frame["reward_model"]])
max_model_len = power_sampling.context_needed(
    [ids for prompts, _, _ in problems.values() for ids in prompt_format.render(tokenizer, prompts, template)],
    p.max_new_tokens,
)
two = snakemake.input.policy != snakemake.input.base
for model in {snakemake.input.policy, snakemake.input.base}:
    trouble = prompt_format.engine_problems(model, p.tensor_parallel, max_model_len, p.chat_template, snakemake.input.base)
    if trouble:
        raise SystemExit(f"vLLM would refuse {model}:\n- " + "\n- ".join(trouble))
engine = lambda path: power_sampling.vllm_engine(  # noqa: E731
    path, p.tensor_parallel, p.seed, max_model_len, memory=0.42 if two else 0.85
)
llm = engine(snakemake.input.policy)
base = engine(snakemake.input.base) if two else llm
log.info("method %s: %s; stop tokens %s; prompt format %s; max_model_len %d",
         snakemake.wildcards.method, p.method, stop_ids, p.chat_template, max_model_len)  # fmt: skip
frames = []
for name, (prompts, answers, styles) in problems.items():
    samples = power_sampling.sample_method_vllm(
        llm, base, tokenizer, prompts, answers, styles, p.method, p.n, p.max_new_tokens, p.seed, stop_ids, template
    )
    samples.insert(0, "benchmark", name)
    log.info("%s: accuracy %.3f, %.1f tokens drawn per answer", name, samples["correct"].mean(), samples["drawn_tokens"].mean())
    frames.append(samples)
atomic.to_parquet(pd.concat(frames, ignore_index=True), snakemake.output[0])
