# The GPU pilot, paper scale (`snakemake --profile slurm pilot --config scale=paper`): the smallest model through
# every GPU rule of the study, once, with settings cut to minutes (config.yaml paper.pilot), then a report of what
# passed, how fast it ran and what the study would cost on this cluster. The pilot's jobs are the study's rules:
# download_model, preflight, train_verl (interrupted once and resumed, then merged), evaluate_vllm on the first
# problems of each benchmark, and power_sample_vllm (plain, p^alpha, the RL checkpoint).

# The pilot's row in `snakemake --report`, labelled as the figures' are (common.smk report_labels).
PILOT_LABELS = {REPORT_LABEL: "pilot · the GPU pilot's report"}

if PILOT:

    localrules:
        pilot,
        pilot_benchmark,
        pilot_report,

    rule pilot:
        """Every GPU job once, small, and the report (results/pilot/report.md)."""
        input:
            PILOT_REPORT,

    rule pilot_benchmark:
        """A benchmark's first problems, for the pilot's evaluation."""
        input:
            BENCHMARK_FILE,
        output:
            PILOT_BENCHMARK_FILE,
        params:
            problems=PILOT["eval_problems"],
        log:
            "results/logs/pilot_benchmark/{benchmark}.log",
        container:
            image("analysis")
        script:
            "../scripts/pilot_benchmark.py"

    if "speed" in PILOT:

        rule pilot_speed:
            """The update's and the rollout's speed at each size of paper.pilot.speed on one GPU (paper.cost.speed): verl's
            worker and vLLM's engine on random weights of each shape; the report fits the speed laws to them."""
            input:
                tokenizer=MODEL_DIR.format(model=run_model(PILOT_RUNS[0])),  # the pilot's model: its tokenizer
                code=code("pilot_speed", "paper.cost.speed", "paper.cost.update_speed", "paper.cost.rollout_speed"),
            output:
                PILOT_SPEED,
            params:
                scope=pilot_speed_scope(),
            resources:
                gpu=1,
                cpus_per_task=8,
                mem_mb_per_cpu=8000,
                runtime=pilot_speed_minutes(),
            log:
                PILOT_SPEED_LOG,
            container:
                image("train")
            script:
                "../scripts/pilot_speed.py"

    rule pilot_report:
        """Each stage passed or failed, its wall time, peak GPU memory and throughput; the study's GPU-hours again,
        model size by model size, at the MFUs measured here (paper.cost.pilot_report)."""
        input:
            metrics=expand(RUN_METRICS, run=PILOT_RUNS),
            final=expand(RUN_FINAL, run=PILOT_RUNS),
            evaluations=expand(EVAL_SUMMARY, run=PILOT_RUNS),
            samples=expand(POWER_SAMPLES, method=list(PILOT_METHODS)),
            speed=[PILOT_SPEED] if "speed" in PILOT else [],
            node=expand(RUN_METRICS, run=PILOT_NODE_RUNS),  # the speed run on its own node (paper.pilot.speed.node)
            code=code("pilot_report", "paper.cost.pilot_report"),
        output:
            md=PILOT_REPORT,
            html=report(PILOT_REPORT_HTML, caption="../report/pilot.rst", category="Pilot", labels=PILOT_LABELS),
            estimate=PILOT_ESTIMATE,
        params:
            stages=pilot_stages(),
            scope=pilot_report_scope(),
        log:
            "results/logs/pilot_report.log",
        container:
            image("analysis")
        script:
            "../scripts/pilot_report.py"
