from entropy_rl.core import spec as run_spec


if MINI:

    rule evaluate:
        """The final policy on every benchmark with the paper's decoding protocol, graded by math-verify:
        one Hugging Face model load for all benchmarks."""
        input:
            model=RUN_FINAL,
            benchmarks=bench_files(),
            code=code("evaluate", "mini.evaluate", "mini.data", "mini.models"),
        output:
            samples=expand(EVAL_SAMPLES, run="{run}", benchmark=BENCHMARKS),
            summary=EVAL_SUMMARY,
        params:
            backend="mini",
            protocols=protocols(),
            max_new_tokens=lambda wc: run_spec.eval_max_new_tokens(S, wc.run),  # one reading at both scales
            pass_k=S["eval"]["pass_k"],
            seed=S["eval"]["seed"],
        threads: 1
        log:
            EVAL_LOG,
        container:
            image("analysis")
        script:
            "../scripts/evaluate.py"

else:

    rule evaluate_vllm:
        """The merged final policy on every benchmark with one vLLM engine on the model's
        tensor-parallel GPUs, prompts in the model's prompt format (paper.models.<m>.chat_template):
        math graded by math-verify, code run against its tests in the sandbox."""
        input:
            model=RUN_FINAL,
            benchmarks=run_bench_files,  # a pilot run's: the first problems of each (pilot.smk)
            preflight=EVAL_PREFLIGHT,
            code=code("evaluate_vllm", "paper.evaluate"),
        output:
            samples=expand(EVAL_SAMPLES, run="{run}", benchmark=BENCHMARKS),
            summary=EVAL_SUMMARY,
        params:
            backend="paper",
            protocols=protocols(),
            max_new_tokens=lambda wc: run_spec.eval_max_new_tokens(S, wc.run),
            pass_k=S["eval"]["pass_k"],
            seed=S["eval"]["seed"],
            tensor_parallel=lambda wc: run_model_spec(wc.run)["tensor_parallel"],
            chat_template=lambda wc: run_model_spec(wc.run)["chat_template"],
        # The engine's GPUs only: vLLM shards the model over `tensor_parallel` of them (a size that
        # divides its attention heads), and SLURM packs other jobs onto the rest of the node.
        resources:
            **engine_resources(lambda wc: run_model_spec(wc.run)["tensor_parallel"], lambda wc: eval_hours(wc.run)),
        log:
            EVAL_LOG,
        container:
            image("eval")
        script:
            "../scripts/evaluate.py"


rule evaluations:
    """Every run's final policy on the benchmarks (`snakemake evaluations`). The study itself evaluates only
    the runs whose test accuracy a table or a claim reads (EVALUATED_RUNS)."""
    input:
        expand(EVAL_SUMMARY, run=RUNS),
    localrule: True
