# Power sampling beside RL (Karan & Du, 2025): the base model sampled from p^alpha, without
# training, against plain and low-temperature sampling and the RL checkpoints of the same model. The study's
# table and figures are registered artifacts, built by figures.smk's rules.

from entropy_rl.core import paths


if PLAN.power:

    if PLAN.mini:

        rule power_sample:
            """n answers to each problem by one method, graded, with their base-model likelihood and token cost."""
            input:
                base=lambda wc: PLAN.power_base_model(wc.method),
                policy=power_policy,
                benchmarks=lambda wc: PLAN.power_benchmark_files(wc.method),
                code=PLAN.code("power_sample", "core.power.sample_job", "mini.power_sampling", "mini.data", "mini.models"),
            output:
                paths.POWER_SAMPLES,
            params:
                backend="mini",  # the scale, whose sampler of each kind core.backends names
                method=lambda wc: PLAN.power_methods[wc.method],
                problems=PLAN.power["problems"],
                n=PLAN.power["n"],
                max_new_tokens=PLAN.power["max_new_tokens"],
                seed=lambda wc: PLAN.power_study.seed(wc.method),
            threads: 1
            log:
                paths.POWER_LOG,
            container:
                PLAN.image("analysis")
            script:
                "../scripts/power_sample.py"

    else:

        rule power_sample_vllm:
            """The same answers on the base model's tensor-parallel GPUs: vLLM engines for the method's
            model and, for an RL checkpoint, the base model that scores its answers; power sampling
            batches all its chains. The engines' context is the longest prompt + the answer + 1. The pilot's
            sampling jobs (pilot.smk) run here too, on the pilot's model and GPU."""
            input:
                base=lambda wc: PLAN.power_base_model(wc.method),
                policy=power_policy,
                preflight=lambda wc: PLAN.power_preflight(wc.method),
                benchmarks=lambda wc: PLAN.power_benchmark_files(wc.method),
                code=lambda wc: PLAN.power_sampler_code(wc.method),
            output:
                paths.POWER_SAMPLES,
            params:
                backend="paper",  # the scale, whose sampler of each kind core.backends names
                method=lambda wc: PLAN.power_job(wc.method)["settings"],
                problems=lambda wc: PLAN.power_job(wc.method)["problems"],
                n=lambda wc: PLAN.power_job(wc.method)["n"],
                max_new_tokens=lambda wc: PLAN.power_job(wc.method)["max_new_tokens"],
                seed=lambda wc: PLAN.power_job(wc.method)["seed"],
                tensor_parallel=lambda wc: PLAN.power_job(wc.method)["placement"].tensor_parallel,
                chat_template=lambda wc: PLAN.power_job(wc.method)["chat_template"],
            # The engines' GPUs only (both engines share them): vLLM shards the model over
            # `tensor_parallel` of them, a size that divides its attention heads.
            resources:
                **PLAN.engine_resources(
                    "power_sample_vllm", lambda wc: PLAN.power_job(wc.method)["placement"].tensor_parallel
                ),
            log:
                paths.POWER_LOG,
            container:
                PLAN.image("eval")
            script:
                "../scripts/power_sample.py"
