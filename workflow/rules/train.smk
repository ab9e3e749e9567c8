if MINI:

    rule train:
        """One RL run: base model x algorithm x entropy treatment (the mini trainer)."""
        input:
            model=run_model_dir,
            train=run_train_data,
            benchmarks=bench_files(),
            code=code("trainer", "algorithms", "prime", "metrics", "generation", "grading", "evaluate", "data", "models"),
        output:
            metrics="results/runs/{run}/metrics.parquet",
            final=directory("results/runs/{run}/final"),
        params:
            spec=run_settings,
        threads: 1
        log:
            "results/logs/train/{run}.log",
        container:
            image("analysis")
        script:
            "../scripts/train.py"

else:

    rule train_verl:
        """One RL run with verl on the run's GPU nodes (Ray across nodes for 24B/32B). verl writes
        checkpoints to results/runs/{run}/checkpoints and resumes from the last one, so a requeued
        or rerun job continues; the last checkpoint is merged into a Hugging Face model."""
        input:
            model=run_model_dir,
            train=train_data_with_budget,
            validation="results/data/benchmarks/validation.parquet",
            preflight="results/preflight/{run}.txt",
            code=code("launch", "spec", "prompt_format", "verl_plugin", "verl_metrics", "metrics", "reward", "grading", "sandbox", "prime_main"),
        output:
            metrics="results/runs/{run}/metrics.parquet",
            final=directory("results/runs/{run}/final"),
        params:
            spec=run_settings,
            command=lambda wc: launch.verl_command(S, wc.run),
            gpus_per_node=lambda wc: S["models"][S["runs"][wc.run]["model"]]["gpus_per_node"],
            benchmarks=BENCHMARKS,
        resources:
            nodes=lambda wc: train_resources(wc.run)["nodes"],
            gpu=lambda wc: train_resources(wc.run)["gpu"],
            cpus_per_task=lambda wc: train_resources(wc.run)["cpus_per_task"],
            mem_mb_per_cpu=lambda wc: train_resources(wc.run)["mem_mb_per_cpu"],
            runtime=lambda wc: train_resources(wc.run)["runtime"],
            slurm_extra=lambda wc: train_resources(wc.run)["slurm_extra"],
        log:
            "results/logs/train/{run}.log",
        container:
            run_image
        script:
            "../scripts/train_verl.py"
