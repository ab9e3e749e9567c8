from entropy_rl.core import spec as run_spec


if MINI:

    rule build_tokenizer:
        """Byte-level BPE trained offline on the mini task corpus."""
        input:
            corpus=PRETRAIN_CORPUS,
            code=code("build_tokenizer", "mini.tokenizer", "mini.data"),
        output:
            directory(TOKENIZER_DIR),
        params:
            vocab_size=S["tokenizer"]["vocab_size"],
        log:
            "results/logs/build_tokenizer.log",
        container:
            image("analysis")
        script:
            "../scripts/build_tokenizer.py"


    rule build_mini_model:
        """A tiny Hugging Face model, pre-trained on the mini tasks and saved like a hub model; an instruct
        model is its base model tuned further on instruction-style worked solutions (Appendix D)."""
        input:
            unpack(instruct_inputs),
            tokenizer=TOKENIZER_DIR,
            corpus=PRETRAIN_CORPUS,
            benchmarks=bench_files(),
            code=code("build_mini_model", "mini.models", "mini.evaluate", "mini.data"),
        output:
            directory(MODEL_DIR),
        params:
            arch=lambda wc: canonical(S["models"][wc.model]),
            pretrain=lambda wc: canonical(run_spec.pretrain_settings(S, wc.model)),
            protocols=protocols(),
            max_new_tokens=S["eval"]["max_new_tokens"],  # a base model's check: the scale's cap (no run to cap it)
        threads: 1
        # Every base model first, then the runs (train.smk), then what reads them: a model built last
        # leaves its run, evaluation and every figure that needs them to run on one core at the end.
        priority: 2
        log:
            "results/logs/build_mini_model/{model}.log",
        container:
            image("analysis")
        script:
            "../scripts/build_mini_model.py"

else:

    # Downloads run where the workflow is started: compute nodes often have no internet.
    localrules:
        download_model,
        download_dataset,

    rule download_model:
        """A base model from the hub at its locked commit (or the mirror), every file checksummed."""
        input:
            code=code("download_model", "paper.hub"),
        output:
            directory(MODEL_DIR),
        params:
            repo=lambda wc: S["models"][wc.model]["hub"],
            revision=lambda wc: S["models"][wc.model].get("revision"),
            lock=lambda wc: lock_file(S["models"][wc.model]["hub"]),
            mirror=S["hub"]["mirror"],
            repo_type="model",
        log:
            MODEL_LOG,
        container:
            image("eval")
        script:
            "../scripts/download.py"
