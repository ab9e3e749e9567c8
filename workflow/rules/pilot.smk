# The GPU pilot, paper scale (`snakemake --profile slurm pilot --config scale=paper`): the smallest model through
# every GPU rule of the study, once, with settings cut to minutes (config.yaml paper.pilot), then a report of what
# passed, how fast it ran and what the study would cost on this cluster. The pilot's jobs are the study's rules:
# download_model, preflight, train_verl (interrupted once and resumed, then merged), evaluate_vllm on the first
# problems of each benchmark, and power_sample_vllm (plain, p^alpha, the RL checkpoint).

from entropy_rl.core import paths
from entropy_rl.pipeline import params as pipeline_params
from entropy_rl.pipeline import pilot as pilot_jobs
from entropy_rl.pipeline import resources




if PLAN.pilot:

    localrules:
        pilot,
        pilot_benchmark,
        pilot_report,

    rule pilot:
        """Every GPU job once, small, and the report (results/pilot/report.md)."""
        input:
            paths.PILOT_REPORT,

    rule pilot_benchmark:
        """A benchmark's first problems, for the pilot's evaluation."""
        input:
            benchmark=paths.BENCHMARK_FILE,
            code=PLAN.code("pilot_benchmark", "paper.cost.pilot_jobs"),
        output:
            paths.PILOT_BENCHMARK_FILE,
        params:
            problems=PLAN.pilot["eval_problems"],
        log:
            paths.log("pilot_benchmark", "{benchmark}"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/pilot_benchmark.py"

    if "speed" in PLAN.pilot:

        rule pilot_speed:
            """The update's and the rollout's speed at each size of paper.pilot.speed on one GPU (paper.cost.speed): verl's
            worker and vLLM's engine on random weights of each shape; the report fits the speed laws to them."""
            input:
                tokenizer=paths.MODEL_DIR.format(model=PLAN.run_model(PLAN.pilot_runs[0])),  # the pilot's model: its tokenizer
                code=PLAN.code("pilot_speed", "paper.cost.speed_job", "paper.cost.update_speed", "paper.cost.rollout_speed"),
            output:
                paths.PILOT_SPEED,
            params:
                scope=pilot_jobs.speed_scope(PLAN.scale, PLAN.pilot),
            resources:
                gpu=1,
                cpus_per_task=8,
                mem_mb_per_cpu=8000,
                runtime=resources.pilot_speed_minutes(PLAN.job_hours, PLAN.budget["walltime_margin"]),
            log:
                paths.PILOT_SPEED_LOG,
            container:
                PLAN.image("train")
            script:
                "../scripts/pilot_speed.py"

    rule pilot_report:
        """Each stage passed or failed, its wall time, peak GPU memory and throughput; the study's GPU-hours again,
        model size by model size, at the MFUs measured here (paper.cost.pilot_report)."""
        input:
            metrics=expand(paths.RUN_METRICS, run=PLAN.pilot_runs),
            final=expand(paths.RUN_FINAL, run=PLAN.pilot_runs),
            evaluations=expand(paths.EVAL_SUMMARY, run=PLAN.pilot_runs),
            samples=expand(paths.POWER_SAMPLES, method=list(PLAN.pilot_methods)),
            speed=[paths.PILOT_SPEED] if "speed" in PLAN.pilot else [],
            node=expand(paths.RUN_METRICS, run=PLAN.scope.pilot_node_runs),  # the speed run on its own node (paper.pilot.speed.node)
            code=PLAN.code("pilot_report", "paper.cost.pilot_jobs", "paper.cost.pilot_report"),
        output:
            md=paths.PILOT_REPORT,
            html=report(paths.PILOT_REPORT_HTML, caption="../report/pilot.rst", category="Pilot", labels={pipeline_params.REPORT_LABEL: "pilot · the GPU pilot's report"}),
            estimate=paths.PILOT_ESTIMATE,
        params:
            stages=pilot_jobs.stages(PLAN),
            scope=pilot_jobs.report_scope(PLAN.scale),
        log:
            paths.log("pilot_report"),
        container:
            PLAN.image("analysis")
        script:
            "../scripts/pilot_report.py"
