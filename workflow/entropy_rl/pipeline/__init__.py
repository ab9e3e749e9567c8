"""The workflow's logic, as the rule files call it: the top layer, above mini, paper and study.

The rule files (workflow/rules/*.smk) keep the rules and read one frozen object, ``PLAN`` (common.smk), that
``plan.build`` makes once from the validated config and the workflow; the paths they name are core.paths'. What
they compute is here:

- ``plan``: the study plan (scope, power study, pilot jobs, claims and their jobs, GPU-hours, what is built) and its
  methods that take a run's, a model's or a method's name.
- ``scope``: the study a scale config describes (runs, models, benchmarks, artifacts) and a run's facts.
- ``stamps``: ``canonical`` params and the code stamps (core.modules.stamp) the rules take as inputs.
- ``params``: the params and inputs of the artifacts, the audit and the power preflight.
- ``power``: the sampling jobs of the power-sampling study and of the GPU pilot.
- ``claim_plan``, ``claims``: the claims judged, the jobs they need, their GPU-hours and what the study builds;
  ``claims_budget``: what each claim costs to judge (`snakemake claims_budget`).
- ``gpu_rules``: the rules whose jobs run on GPUs, each with its cost class (the guard, estimate and pilot read it).
- ``resources``: each GPU job's SLURM resources.
- ``estimate``: the GPU-hours estimate and the launch preflight.
- ``cluster``: what runs once the DAG is built (``before_jobs``: the hub token, the estimate, the launch preflight),
  the SLURM jobs' environment without the hub token, and the training jobs submitted again.
- ``guard``: the paid-work guard and ``rerun_causes`` (the Snakefile's ``onstart``).
- ``pilot``: the GPU pilot's cost, stages and report scopes, and the report of a failed pilot.
- ``snakemake_api``: every use of Snakemake's internals (the DAG, the persistence, a job's and a reason's parts, the
  hook once the DAG is built, ``WorkflowError``).

Every Snakemake invocation imports it (common.smk), so it loads no torch, verl, vLLM or transformers at import
(pyproject.toml's contracts, tests/test_layers.py).
"""
