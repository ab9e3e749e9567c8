# Paper scale: every GPU job waits for a preflight that runs verl's own checks on exactly what the
# job will run (entropy_rl.paper.preflight). The launch part already ran when the workflow was planned
# (cluster.smk, check_launches); these rules add what needs the downloads and the prepared data.

from entropy_rl.paper import preflight


if not MINI:

    localrules:
        preflight,
        preflight_power,

    rule preflight:
        """One run, before its GPU job: command validated by verl, reward scored, loss plugin called,
        the model's context, tensor-parallel sizes and prompt format, the parquet through verl's dataset."""
        input:
            model=run_model_dir,
            train=run_train_data,
            validation=VALIDATION_SET,
            code=code("preflight", *preflight.LAUNCH_CODE),
        output:
            RUN_PREFLIGHT,
        params:
            scope=preflight_scope,
        log:
            "results/logs/preflight/{run}.log",
        container:
            run_image
        script:
            "../scripts/preflight.py"

    if POWER:

        rule preflight_power:
            """The power-sampling model against every vLLM engine the study starts it in."""
            input:
                model=MODEL_DIR.format(model=POWER["model"]),
                code=code("preflight_power", "paper.preflight"),
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
