from entropy_rl.core import paths


if PLAN.mini:

    rule evaluate:
        """The final policy on every benchmark with the paper's decoding protocol, graded by math-verify:
        one Hugging Face model load for all benchmarks."""
        input:
            model=paths.RUN_FINAL,
            benchmarks=PLAN.benchmark_files(),
            code=PLAN.code("evaluate", "core.evaluate_job", "mini.evaluate", "mini.data", "mini.models"),
        output:
            samples=expand(paths.EVAL_SAMPLES, run="{run}", benchmark=PLAN.benchmarks),
            summary=paths.EVAL_SUMMARY,
        params:
            backend="mini",  # the scale, whose evaluation core.backends names
            protocols=PLAN.protocols(),
            max_new_tokens=lambda wc: PLAN.scale.eval_max_new_tokens(wc.run),  # one reading at both scales
            pass_k=PLAN.S["eval"]["pass_k"],
            seed=PLAN.S["eval"]["seed"],
        threads: 1
        log:
            paths.EVAL_LOG,
        container:
            PLAN.image("analysis")
        script:
            "../scripts/evaluate.py"

else:

    rule evaluate_vllm:
        """The merged final policy on every benchmark with one vLLM engine on the model's
        tensor-parallel GPUs, prompts in the model's prompt format (paper.models.<m>.chat_template):
        math graded by math-verify, code run against its tests in the sandbox."""
        input:
            model=paths.RUN_FINAL,
            benchmarks=run_benchmark_files,  # a pilot run's: the first problems of each (pilot.smk)
            preflight=paths.EVAL_PREFLIGHT,
            code=PLAN.code("evaluate_vllm", "core.evaluate_job", "paper.evaluate"),
        output:
            samples=expand(paths.EVAL_SAMPLES, run="{run}", benchmark=PLAN.benchmarks),
            summary=paths.EVAL_SUMMARY,
        params:
            backend="paper",  # the scale, whose evaluation core.backends names
            protocols=PLAN.protocols(),
            max_new_tokens=lambda wc: PLAN.scale.eval_max_new_tokens(wc.run),
            pass_k=PLAN.S["eval"]["pass_k"],
            seed=PLAN.S["eval"]["seed"],
            tensor_parallel=lambda wc: PLAN.scale.placement(wc.run).tensor_parallel,
            chat_template=lambda wc: PLAN.scale.model_of(wc.run).chat_template,
            **PLAN.platform_params,
        # The engine's GPUs only: vLLM shards the model over `tensor_parallel` of them (a size that
        # divides its attention heads), and SLURM packs other jobs onto the rest of the node.
        threads: PLAN.engine_threads
        resources:
            **PLAN.engine_resources("evaluate_vllm", lambda wc: PLAN.scale.placement(wc.run).tensor_parallel),
        log:
            paths.EVAL_LOG,
        container:
            PLAN.image("eval")
        script:
            "../scripts/evaluate.py"


rule evaluations:
    """Every run's final policy on the benchmarks (`snakemake evaluations`). The study itself evaluates only
    the runs whose test accuracy a table or a claim reads (PLAN.evaluated_runs)."""
    input:
        expand(paths.EVAL_SUMMARY, run=PLAN.runs),
    localrule: True
