# Paper scale: every GPU job waits for a preflight that runs verl's own checks on exactly what the
# job will run (entropy_rl.paper.preflight). The launch part already ran when the workflow was planned
# (pipeline.cluster.before_jobs, through pipeline.estimate.check_launches); these rules add what needs the downloads and the prepared data.
#
# A preflight's code is an ancient() input: a change of it alone reruns no preflight. Snakemake 9.27 reruns every
# job after one that reruns, whatever the rerun wrote (dag.py update_needrun; checksums spare only a later
# invocation), so a preflight rerun for its code would outdate its GPU jobs though its verdict is the same. Only an
# ancient() link stops that, and it also stops Snakemake from looking at the later job's own reasons (issue
# snakemake#4166): the GPU jobs keep a plain link, and the preflight reruns when what it reads does (model, data,
# settings). A finished run trained again is checked by the launch part with the code it will run, before
# anything is submitted (the Snakefile's onstart, pipeline.estimate.check_retrained_launches).

from entropy_rl.core import paths
from entropy_rl.paper import preflight, reward_launch
from entropy_rl.pipeline import params as pipeline_params


if not PLAN.mini:

    localrules:
        preflight,
        preflight_eval,

    rule preflight:
        """One run, before its GPU job: command validated by verl, reward scored, loss plugin called,
        the model's context, tensor-parallel sizes and prompt format, the parquet through verl's dataset."""
        input:
            model=run_model_dir,
            train=run_train_data,
            validation=paths.VALIDATION_SET,
            code=ancient(PLAN.code("preflight", *preflight.LAUNCH_CODE)),
        output:
            paths.RUN_PREFLIGHT,
        params:
            command=lambda wc: reward_launch.verl_command(PLAN.scale, wc.run),  # train_verl's params: what the job runs
            spec=run_settings,
            rollout=lambda wc: preflight.run_engine(PLAN.scale, wc.run, "rollout"),
            benchmarks=sorted(PLAN.benchmarks),
        log:
            paths.RUN_PREFLIGHT_LOG,
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
            code=ancient(PLAN.code("preflight_eval", "paper.preflight")),
        output:
            paths.EVAL_PREFLIGHT,
        params:
            engines=lambda wc: [preflight.run_engine(PLAN.scale, wc.run, "evaluate")],
        log:
            paths.EVAL_PREFLIGHT_LOG,
        container:
            PLAN.image("eval")
        script:
            "../scripts/preflight.py"

    if PLAN.power:

        localrules:
            preflight_power,

        rule preflight_power:
            """The power-sampling model against every vLLM engine the study starts it in."""
            input:
                model=paths.MODEL_DIR.format(model=PLAN.power["model"]),
                code=ancient(PLAN.code("preflight_power", "paper.preflight")),
            output:
                paths.POWER_PREFLIGHT,
            params:
                scope=pipeline_params.preflight_power_scope(PLAN.scale),
            log:
                paths.log("preflight/power"),
            container:
                PLAN.image("eval")
            script:
                "../scripts/preflight.py"
