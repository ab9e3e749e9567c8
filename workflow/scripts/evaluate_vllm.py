from pathlib import Path

import pandas as pd
from transformers import AutoTokenizer

from entropy_rl import atomic, data, evaluate, logs, prompt_format

log = logs.setup(snakemake.log[0], snakemake.threads)
p = snakemake.params
model = snakemake.input.model
tokenizer = AutoTokenizer.from_pretrained(model)
template = prompt_format.chat_template(p.chat_template, tokenizer)  # refuses a tokenizer that cannot serve it
frames = {Path(path).stem: data.load_verl_parquet(path) for path in snakemake.input.benchmarks}
# The context every benchmark needs: its longest prompt, rendered as vLLM's chat renders it, + the answer.
longest = max(len(ids) for f in frames.values() for ids in prompt_format.render(tokenizer, list(f["prompt"]), template))
max_model_len = longest + p.max_new_tokens
problems = prompt_format.engine_problems(model, p.tensor_parallel, max_model_len, p.chat_template, model)
if problems:
    raise SystemExit("vLLM would refuse this evaluation:\n- " + "\n- ".join(problems))
log.info("prompt format %s, tensor parallel %d, max_model_len %d", p.chat_template, p.tensor_parallel, max_model_len)
# One engine load for every benchmark of this checkpoint.
llm = evaluate.vllm_engine(model, p.tensor_parallel, p.seed, max_model_len)
rows = []
for (name, frame), out_path in zip(frames.items(), snakemake.output.samples):
    proto = p.protocols[name]
    samples = evaluate.vllm_samples(llm, frame, proto, p.max_new_tokens, p.seed, template)
    samples.insert(0, "benchmark", name)
    atomic.to_parquet(samples, out_path)
    summary = evaluate.summarize(samples, p.pass_k)
    rows.append({"benchmark": name, "temperature": proto["temperature"], **summary})
    log.info("%s %s", name, summary)
atomic.to_parquet(pd.DataFrame(rows), snakemake.output.summary)
