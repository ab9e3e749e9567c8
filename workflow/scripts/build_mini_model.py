from entropy_rl.core import warm_start

# A local study's job goes on in a warm interpreter that has already imported what follows (core.warm_start).
warm_start.hand_over()

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from entropy_rl.core import atomic, formats, logs, model_size  # noqa: E402
from entropy_rl.mini import evaluate, models  # noqa: E402

log = logs.setup(snakemake.log[0], snakemake.threads)
arch, settings = snakemake.params.arch, snakemake.params.pretrain
# A replicate (core.spec.with_replicates) is its model under its own pre-training seed.
seed = models.model_seed(arch.get("replicate_of", snakemake.wildcards.model), arch.get("pretrain_seed", settings["seed"]))
if "instruct_of" in arch:  # an instruct model: its base model, tuned further on instruction-style solutions
    model, tok = models.load(snakemake.input.base)
    corpus = formats.load_verl_parquet(snakemake.input.instruct)
else:
    model, tok = models.build_mini_model(arch["family"], arch, snakemake.input.tokenizer, seed)
    corpus = formats.load_verl_parquet(snakemake.input.corpus)
prompts, _ = formats.prompts_and_answers(corpus)
precision = models.pretrain_precision(settings["precision"])
log.info("pre-training in %s", precision)
losses = models.pretrain(model, tok, prompts, list(corpus["response"]), settings["steps"], settings["batch_size"], settings["lr"], seed,
                         precision)  # fmt: skip

# Starting pass rates, so a model that solves nothing is caught here, not after RL.
pass_rates = {}
for path in snakemake.input.benchmarks:
    name = Path(path).stem
    frame = formats.load_verl_parquet(path)
    p, a = formats.prompts_and_answers(frame)
    pass_rates[name] = evaluate.accuracy(model, tok, p, a, formats.problem_styles(frame), snakemake.params.protocols[name],
                                         snakemake.params.max_new_tokens)  # fmt: skip
log.info("starting pass rates %s", pass_rates)
if max(pass_rates.values()) == 0:
    raise RuntimeError(f"pre-trained model solves no benchmark problem; raise pretrain.steps ({pass_rates})")

meta = {
    "family": arch["family"],
    "seed": seed,
    "arch": arch,
    "tuned_from": arch.get("instruct_of"),
    "non_embedding_params": model_size.non_embedding_params(model.config.to_dict()),
    "pretrain_precision": precision,
    "pretrain_final_loss": losses[-1],
    "starting_pass_rates": pass_rates,
}
with atomic.output(snakemake.output[0]) as out:
    model.save_pretrained(out)
    tok.save_pretrained(out)
    (out / "mini_model.json").write_text(json.dumps(meta, indent=2))
