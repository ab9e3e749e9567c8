from entropy_rl.core import paths
from entropy_rl.pipeline.stamps import canonical


if PLAN.mini:

    rule prepare_mini_data:
        """Procedural tasks from reasoning-gym at fixed seeds, as verl parquet."""
        input:
            code=PLAN.code("prepare_mini_data", "mini.data"),
        output:
            train=paths.TRAIN_DATA,
            pretrain=paths.PRETRAIN_CORPUS,
            benchmarks=PLAN.benchmark_files(),
            **({"instruct": paths.INSTRUCT_CORPUS} if "instruct" in PLAN.S["data"] else {}),
        params:
            spec=canonical({k: v for k, v in PLAN.S["data"].items() if k != "train_sets"}),
        log:
            paths.log("prepare_mini_data"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/prepare_mini_data.py"

    rule prepare_mini_train_set:
        """A further training set from other task families, for runs that name it (Appendix C)."""
        input:
            benchmarks=PLAN.benchmark_files(),
            code=PLAN.code("prepare_mini_train_set", "mini.data"),
        output:
            paths.TRAIN_SET,
        params:
            spec=lambda wc: canonical(PLAN.S["data"]["train_sets"][wc.train_set]),
            benchmarks=canonical(PLAN.S["data"]["benchmarks"]),
            seed=PLAN.S["data"]["seed"],
        log:
            paths.log("prepare_mini_train_set", "{train_set}"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/prepare_mini_train_set.py"

else:

    rule download_dataset:
        """One hub dataset at its locked commit (or from the mirror), every file checksummed."""
        wildcard_constraints:
            source=PLAN.sources_from("hub"),
        input:
            code=PLAN.code("download_dataset", "paper.hub"),
        output:
            directory(paths.SOURCE_DIR),
        params:
            repo=lambda wc: PLAN.S["data"]["sources"][wc.source]["hub"],
            revision=lambda wc: PLAN.S["data"]["sources"][wc.source].get("revision"),
            lock=lambda wc: PLAN.lock_file(PLAN.S["data"]["sources"][wc.source]["hub"]),
            mirror=PLAN.S["hub"]["mirror"],
            repo_type="dataset",
        log:
            paths.log("download_dataset", "{source}"),
        container:
            PLAN.image("eval")
        script:
            "../scripts/download.py"

    rule generate_dataset:
        """A source generated offline by reasoning-gym at a fixed seed (paper.gym_source), where no hub is reached:
        read by its parts like a download."""
        wildcard_constraints:
            source=PLAN.sources_from("gym"),
        input:
            code=PLAN.code("generate_dataset", "paper.gym_source"),
        output:
            directory(paths.SOURCE_DIR),
        params:
            gym=lambda wc: canonical(PLAN.S["data"]["sources"][wc.source]["gym"]),
        log:
            paths.log("generate_dataset", "{source}"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/generate_dataset.py"

    localrules:
        check_source,

    rule check_source:
        """A downloaded source against every part that reads it (globs, fields, readable files),
        from file listings and schemas only: a mismatch names what is there, and the download stays."""
        input:
            source=paths.SOURCE_DIR,
            code=PLAN.code("check_source", "paper.data"),
        output:
            paths.SOURCE_CHECKED,
        params:
            parts=lambda wc: canonical({n: p for n, p in PLAN.S["data"]["parts"].items() if p["source"] == wc.source}),
        log:
            paths.log("check_source", "{source}"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/check_source.py"

    rule prepare_benchmark:
        """One benchmark as verl parquet, its data_source named for it."""
        input:
            source=lambda wc: PLAN.source_dir(PLAN.S["data"]["benchmarks"][wc.benchmark]["part"]),
            checked=lambda wc: PLAN.source_checked(PLAN.S["data"]["benchmarks"][wc.benchmark]["part"]),
            code=PLAN.code("prepare_benchmark", "paper.data"),
        output:
            paths.BENCHMARK_FILE,
        params:
            part=lambda wc: canonical(PLAN.S["data"]["parts"][PLAN.S["data"]["benchmarks"][wc.benchmark]["part"]]),
            part_name=lambda wc: PLAN.S["data"]["benchmarks"][wc.benchmark]["part"],
            templates=canonical(PLAN.S["data"]["prompt_templates"]),
            seed=PLAN.S["data"]["seed"],
        log:
            paths.log("prepare_benchmark", "{benchmark}"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/prepare_benchmark.py"

    rule validation_set:
        """All benchmarks in one file: verl validates on it every val_every steps."""
        input:
            benchmarks=PLAN.benchmark_files(),
            code=PLAN.code("validation_set", "paper.data"),
        output:
            paths.VALIDATION_SET,
        log:
            paths.log("validation_set"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/concat_parquet.py"

    rule prepare_train_set:
        """An RL training set: its parts as verl parquet, shuffled together."""
        input:
            sources=lambda wc: sorted({PLAN.source_dir(p) for p in PLAN.S["data"]["train_sets"][wc.train_set]}),
            checked=lambda wc: sorted({PLAN.source_checked(p) for p in PLAN.S["data"]["train_sets"][wc.train_set]}),
            code=PLAN.code("prepare_train_set", "paper.data"),
        output:
            paths.TRAIN_SET,
        params:
            parts=lambda wc: {p: canonical(PLAN.S["data"]["parts"][p]) for p in PLAN.S["data"]["train_sets"][wc.train_set]},
            templates=canonical(PLAN.S["data"]["prompt_templates"]),
            seed=PLAN.S["data"]["seed"],
        log:
            paths.log("prepare_train_set", "{train_set}"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/prepare_train_set.py"
