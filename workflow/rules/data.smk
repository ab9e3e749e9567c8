if MINI:

    rule prepare_mini_data:
        """Procedural tasks from reasoning-gym at fixed seeds, as verl parquet."""
        input:
            code=code("prepare_mini_data", "mini.data"),
        output:
            train=TRAIN_DATA,
            pretrain=PRETRAIN_CORPUS,
            benchmarks=bench_files(),
            **({"instruct": INSTRUCT_CORPUS} if "instruct" in S["data"] else {}),
        params:
            spec=canonical({k: v for k, v in S["data"].items() if k != "train_sets"}),
        log:
            "results/logs/prepare_mini_data.log",
        container:
            image("analysis")
        script:
            "../scripts/prepare_mini_data.py"

    rule prepare_mini_train_set:
        """A further training set from other task families, for runs that name it (Appendix C)."""
        input:
            benchmarks=bench_files(),
            code=code("prepare_mini_train_set", "mini.data"),
        output:
            TRAIN_SET,
        params:
            spec=lambda wc: canonical(S["data"]["train_sets"][wc.train_set]),
            benchmarks=canonical(S["data"]["benchmarks"]),
            seed=S["data"]["seed"],
        log:
            "results/logs/prepare_mini_train_set/{train_set}.log",
        container:
            image("analysis")
        script:
            "../scripts/prepare_mini_train_set.py"

else:

    rule download_dataset:
        """One hub dataset at its locked commit (or from the mirror), every file checksummed."""
        input:
            code=code("download_dataset", "paper.hub"),
        output:
            directory(SOURCE_DIR),
        params:
            repo=lambda wc: S["data"]["sources"][wc.source]["hub"],
            revision=lambda wc: S["data"]["sources"][wc.source].get("revision"),
            lock=lambda wc: lock_file(S["data"]["sources"][wc.source]["hub"]),
            mirror=S["hub"]["mirror"],
            repo_type="dataset",
        log:
            "results/logs/download_dataset/{source}.log",
        container:
            image("eval")
        script:
            "../scripts/download.py"

    localrules:
        check_source,

    rule check_source:
        """A downloaded source against every part that reads it (globs, fields, readable files),
        from file listings and schemas only: a mismatch names what is there, and the download stays."""
        input:
            source=SOURCE_DIR,
            code=code("check_source", "paper.data"),
        output:
            SOURCE_CHECKED,
        params:
            parts=lambda wc: canonical({n: p for n, p in S["data"]["parts"].items() if p["source"] == wc.source}),
        log:
            "results/logs/check_source/{source}.log",
        container:
            image("analysis")
        script:
            "../scripts/check_source.py"

    rule prepare_benchmark:
        """One benchmark as verl parquet, its data_source named for it."""
        input:
            source=lambda wc: source_dir(S["data"]["benchmarks"][wc.benchmark]["part"]),
            checked=lambda wc: source_checked(S["data"]["benchmarks"][wc.benchmark]["part"]),
            code=code("prepare_benchmark", "paper.data"),
        output:
            BENCHMARK_FILE,
        params:
            part=lambda wc: canonical(S["data"]["parts"][S["data"]["benchmarks"][wc.benchmark]["part"]]),
            part_name=lambda wc: S["data"]["benchmarks"][wc.benchmark]["part"],
            templates=canonical(S["data"]["prompt_templates"]),
            seed=S["data"]["seed"],
        log:
            "results/logs/prepare_benchmark/{benchmark}.log",
        container:
            image("analysis")
        script:
            "../scripts/prepare_benchmark.py"

    rule validation_set:
        """All benchmarks in one file: verl validates on it every val_every steps."""
        input:
            bench_files(),
        output:
            VALIDATION_SET,
        log:
            "results/logs/validation_set.log",
        container:
            image("analysis")
        script:
            "../scripts/concat_parquet.py"

    rule prepare_train_set:
        """An RL training set: its parts as verl parquet, shuffled together."""
        input:
            sources=lambda wc: sorted({source_dir(p) for p in S["data"]["train_sets"][wc.train_set]}),
            checked=lambda wc: sorted({source_checked(p) for p in S["data"]["train_sets"][wc.train_set]}),
            code=code("prepare_train_set", "paper.data"),
        output:
            TRAIN_SET,
        params:
            parts=lambda wc: {p: canonical(S["data"]["parts"][p]) for p in S["data"]["train_sets"][wc.train_set]},
            templates=canonical(S["data"]["prompt_templates"]),
            seed=S["data"]["seed"],
        log:
            "results/logs/prepare_train_set/{train_set}.log",
        container:
            image("analysis")
        script:
            "../scripts/prepare_train_set.py"
