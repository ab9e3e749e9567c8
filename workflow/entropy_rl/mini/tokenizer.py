"""An offline byte-level BPE tokenizer for the mini model family.

Built with the ``tokenizers`` library on the mini task corpus, with digits split
one per token (as Qwen2 and Llama 3 tokenizers do), and saved as a
``PreTrainedTokenizerFast`` with a chat template, so later stages call
``AutoTokenizer.from_pretrained`` and ``apply_chat_template`` exactly as they
would on a hub model.
"""

from __future__ import annotations

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from ..core import atomic, formats, logs

EOS = "<|endoftext|>"
PAD = "<|pad|>"
# A base-model style template: the user's turn, then the answer cue. The
# generation prompt is the cue; the model's response follows it.
CHAT_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'user' %}Question: {{ m['content'] }}\n"
    "{% elif m['role'] == 'assistant' %}Answer: {{ m['content'] }}" + EOS + "\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}Answer:{% endif %}"
)


def build_tokenizer(texts: list[str], vocab_size: int) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, pad_token=PAD, padding_side="left")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def corpus_texts(corpus) -> list[str]:
    """What the tokenizer learns from: each prompt of the pre-training corpus with its response, and the template's
    own words."""
    prompts, _ = formats.prompts_and_answers(corpus)
    return [p[-1]["content"] + r for p, r in zip(prompts, corpus["response"])] + ["Question: Answer:"]


def main(snakemake) -> None:
    """Rule build_tokenizer: the tokenizer trained on the pre-training corpus."""
    log = logs.setup(snakemake.log[0])
    tok = build_tokenizer(corpus_texts(formats.load_verl_parquet(snakemake.input.corpus)), snakemake.params.vocab_size)
    with atomic.output(snakemake.output[0]) as out:
        tok.save_pretrained(out)
    log.info("tokenizer with %d tokens", len(tok))
