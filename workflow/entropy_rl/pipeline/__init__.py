"""The workflow's logic, as the rule files call it: the top layer, above mini, paper and study.

The rule files (workflow/rules/*.smk) keep the rules, thin input functions that bind wildcards and the scale config
to the functions here, and one-line calls; everything they compute is here, as plain functions of explicit
arguments (the resolved scale config ``S``, a run's or a method's name, paths.smk's templates):

- ``scope``: the study a scale config describes (runs, models, benchmarks, artifacts) and a run's facts.
- ``stamps``: ``canonical`` params and the code stamps (core.modules.stamp) the rules take as inputs.
- ``params``: the params and inputs of the artifacts, the audit and the power preflight.
- ``power``: the sampling jobs of the power-sampling study and of the GPU pilot.
- ``claim_plan``, ``claims``: the claims judged, the jobs they need, their GPU-hours and what the study builds.
- ``resources``: each GPU job's SLURM resources and estimated hours.
- ``estimate``: the GPU-hours estimate and the launch preflight, before any job.
- ``guard``: the paid-work guard and ``rerun_causes`` (the Snakefile's ``onstart``).
- ``pilot``: the GPU pilot's cost, stages and report scopes, and the report of a failed pilot.
- ``cluster``: the SLURM jobs' environment without the hub token, and the hub-access check.
- ``snakemake_api``: every use of Snakemake's internals (the DAG, the persistence, ``WorkflowError``).

Every Snakemake invocation imports it (common.smk), so it loads no torch, verl, vLLM or transformers at import
(pyproject.toml's contracts, tests/test_layers.py).
"""
