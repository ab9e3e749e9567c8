from entropy_rl.core import paths
from entropy_rl.paper import reward_launch


if PLAN.mini:

    rule train:
        """One RL run: base model x algorithm x entropy treatment (the mini trainer)."""
        input:
            model=run_model_dir,
            train=run_train_data,
            benchmarks=run_validation_files,
            code=PLAN.code("train", "mini.trainer"),
        output:
            metrics=paths.RUN_METRICS,
            final=directory(paths.RUN_FINAL),
        params:
            spec=run_settings,
        threads: 1
        priority: 1  # after the base models, before the evaluations and samples (models.smk)
        log:
            paths.TRAIN_LOG,
        container:
            PLAN.image("analysis")
        script:
            "../scripts/train.py"

else:

    rule train_verl:
        """One RL run with verl on the run's GPU nodes (Ray across nodes for 24B/32B). verl writes
        checkpoints to results/runs/{run}/checkpoints and resumes from the last one, so a requeued
        or rerun job continues; the last checkpoint is merged into a Hugging Face model."""
        input:
            model=run_model_dir,
            train=run_train_data,
            validation=paths.VALIDATION_SET,
            preflight=paths.RUN_PREFLIGHT,
            code=train_code,
        output:
            metrics=paths.RUN_METRICS,
            final=directory(paths.RUN_FINAL),
        params:
            spec=run_settings,
            command=lambda wc: reward_launch.verl_command(PLAN.scale, wc.run),  # run_command's builder, the run resolved once, with its own reward
            gpus_per_node=lambda wc: PLAN.scale.placement(wc.run).gpus_per_node,
            benchmarks=PLAN.benchmarks,
            **PLAN.platform_params,
        threads: PLAN.engine_threads
        resources:
            nodes=lambda wc: PLAN.train_resources(wc.run)["nodes"],
            gpu=lambda wc: PLAN.train_resources(wc.run)["gpu"],
            cpus_per_task=lambda wc: PLAN.train_resources(wc.run)["cpus_per_task"],
            mem_mb_per_cpu=lambda wc: PLAN.train_resources(wc.run)["mem_mb_per_cpu"],
            runtime=lambda wc: PLAN.train_resources(wc.run)["runtime"],
            slurm_extra=lambda wc: PLAN.train_resources(wc.run)["slurm_extra"],
        log:
            paths.TRAIN_LOG,
        container:
            run_image
        script:
            "../scripts/train_verl.py"
