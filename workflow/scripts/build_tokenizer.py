from entropy_rl.core import atomic, formats, logs
from entropy_rl.mini import tokenizer

log = logs.setup(snakemake.log[0])
corpus = formats.load_verl_parquet(snakemake.input.corpus)
prompts, _ = formats.prompts_and_answers(corpus)
texts = [p[-1]["content"] + r for p, r in zip(prompts, corpus["response"])] + ["Question: Answer:"]
tok = tokenizer.build_tokenizer(texts, snakemake.params.vocab_size)
with atomic.output(snakemake.output[0]) as out:
    tok.save_pretrained(out)
log.info("tokenizer with %d tokens", len(tok))
