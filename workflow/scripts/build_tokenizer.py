from entropy_rl import data, logs, tokenizer

log = logs.setup(snakemake.log[0])
prompts, answers = data.prompts_and_answers(data.load_verl_parquet(snakemake.input.corpus))
texts = [p[-1]["content"] + f" \\boxed{{{a}}}" for p, a in zip(prompts, answers)] + ["Question: Answer:"]
tok = tokenizer.build_tokenizer(texts, snakemake.params.vocab_size)
tok.save_pretrained(snakemake.output[0])
log.info("tokenizer with %d tokens", len(tok))
