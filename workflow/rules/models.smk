rule build_tokenizer:
    """Byte-level BPE trained offline on the mini task corpus."""
    input:
        corpus="results/data/pretrain.parquet",
        code=code("tokenizer"),
    output:
        directory("results/models/tokenizer"),
    params:
        vocab_size=S["tokenizer"]["vocab_size"],
    log:
        "results/logs/build_tokenizer.log",
    script:
        "../scripts/build_tokenizer.py"


rule build_mini_model:
    """A tiny Hugging Face model, pre-trained on the mini tasks and saved like a hub model."""
    input:
        tokenizer="results/models/tokenizer",
        corpus="results/data/pretrain.parquet",
        benchmarks=bench_files(),
        code=code("models", "evaluate", "generation", "grading"),
    output:
        directory("results/models/{model}"),
    params:
        arch=lambda wc: canonical(S["models"][wc.model]),
        pretrain=canonical(S["pretrain"]),
        protocols=protocols(),
        max_new_tokens=S["eval"]["max_new_tokens"],
    threads: 1
    log:
        "results/logs/build_mini_model/{model}.log",
    script:
        "../scripts/build_mini_model.py"
