# Power sampling beside RL (Karan & Du, 2025): the base model sampled from p^alpha, without
# training, against plain and low-temperature sampling and the RL checkpoints of the same model. The study's
# table and figures are registered artifacts, built by figures.smk's rules.

if POWER:

    if MINI:

        rule power_sample:
            """n answers to each problem by one method, graded, with their base-model likelihood and token cost."""
            input:
                base=power_base_model,
                policy=power_policy,
                benchmarks=power_benchmark_files,
                code=code("power_sample", "mini.power_sampling", "mini.data", "mini.models"),
            output:
                POWER_SAMPLES,
            params:
                backend="mini",
                method=lambda wc: power_methods()[wc.method],
                problems=POWER["problems"],
                n=POWER["n"],
                max_new_tokens=POWER["max_new_tokens"],
                seed=lambda wc: POWER_STUDY.seed(wc.method),
            threads: 1
            log:
                POWER_LOG,
            container:
                image("analysis")
            script:
                "../scripts/power_sample.py"

    else:

        rule power_sample_vllm:
            """The same answers on the base model's tensor-parallel GPUs: vLLM engines for the method's
            model and, for an RL checkpoint, the base model that scores its answers; power sampling
            batches all its chains. The engines' context is the longest prompt + the answer + 1. The pilot's
            sampling jobs (pilot.smk) run here too, on the pilot's model and GPU."""
            input:
                base=power_base_model,
                policy=power_policy_with_budget,
                preflight=power_preflight,
                benchmarks=power_benchmark_files,
                code=power_sampler_code,
            output:
                POWER_SAMPLES,
            params:
                backend="paper",
                method=lambda wc: power_job(wc.method)["settings"],
                problems=lambda wc: power_job(wc.method)["problems"],
                n=lambda wc: power_job(wc.method)["n"],
                max_new_tokens=lambda wc: power_job(wc.method)["max_new_tokens"],
                seed=lambda wc: power_job(wc.method)["seed"],
                tensor_parallel=lambda wc: power_job(wc.method)["placement"]["tensor_parallel"],
                chat_template=lambda wc: power_job(wc.method)["placement"]["chat_template"],
            # The engines' GPUs only (both engines share them): vLLM shards the model over
            # `tensor_parallel` of them, a size that divides its attention heads.
            resources:
                **engine_resources(
                    lambda wc: power_job(wc.method)["placement"]["tensor_parallel"], lambda wc: power_hours(wc.method)
                ),
            log:
                POWER_LOG,
            container:
                image("eval")
            script:
                "../scripts/power_sample.py"
