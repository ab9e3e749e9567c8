# Paper scale: every GPU job waits for a preflight that runs verl's own checks on exactly what the
# job will run (entropy_rl.paper.preflight). The launch part already ran when the workflow was planned
# (cluster.smk, check_launches); these rules add what needs the downloads and the prepared data.
#
# A preflight's code is an ancient() input: a change of it alone reruns no preflight. Snakemake 9.27 reruns every
# job after one that reruns, whatever the rerun wrote (dag.py update_needrun; checksums spare only a later
# invocation), so a preflight rerun for its code would outdate its GPU jobs though its verdict is the same. Only an
# ancient() link stops that, and it also stops Snakemake from looking at the later job's own reasons (issue
# snakemake#4166): the GPU jobs keep a plain link, and the preflight reruns when what it reads does (model, data,
# settings). A finished run trained again is checked by the launch part with the code it will run, before
# anything is submitted (cluster.smk, check_retrained_launches).

from entropy_rl.paper import preflight, reward_launch


if not MINI:

    localrules:
        preflight,
        preflight_eval,
        preflight_power,

    rule preflight:
        """One run, before its GPU job: command validated by verl, reward scored, loss plugin called,
        the model's context, tensor-parallel sizes and prompt format, the parquet through verl's dataset."""
        input:
            model=run_model_dir,
            train=run_train_data,
            validation=VALIDATION_SET,
            code=ancient(code("preflight", *preflight.LAUNCH_CODE)),
        output:
            RUN_PREFLIGHT,
        params:
            command=lambda wc: reward_launch.verl_command(S, wc.run),  # train_verl's params: what the job runs
            spec=run_settings,
            rollout=lambda wc: preflight.run_engine(S, wc.run, "rollout"),
            benchmarks=sorted(BENCHMARKS),
        log:
            RUN_PREFLIGHT_LOG,
        container:
            run_image
        script:
            "../scripts/preflight.py"

    rule preflight_eval:
        """One run's evaluation engine against the downloaded model: its context (prompt + eval.max_new_tokens),
        tensor-parallel size and prompt format. Apart from the run's preflight, so that an evaluation setting
        outdates the evaluation only, never the training run."""
        input:
            model=run_model_dir,
            code=ancient(code("preflight_eval", "paper.preflight")),
        output:
            EVAL_PREFLIGHT,
        params:
            engines=lambda wc: [preflight.run_engine(S, wc.run, "evaluate")],
        log:
            EVAL_PREFLIGHT_LOG,
        container:
            image("eval")
        script:
            "../scripts/preflight.py"

    if POWER:

        rule preflight_power:
            """The power-sampling model against every vLLM engine the study starts it in."""
            input:
                model=MODEL_DIR.format(model=POWER["model"]),
                code=ancient(code("preflight_power", "paper.preflight")),
            output:
                POWER_PREFLIGHT,
            params:
                scope=preflight_power_scope(),
            log:
                "results/logs/preflight/power.log",
            container:
                image("eval")
            script:
                "../scripts/preflight.py"
