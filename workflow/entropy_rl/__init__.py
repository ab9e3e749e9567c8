"""Reproduction of the entropy mechanism of RL for reasoning LMs: the stages the workflow runs.

Five layers, each a subpackage; the import rule between them is a contract the tests check
(``[tool.importlinter]`` in pyproject.toml):

- ``pipeline``: what the rule files compute (the study's scope, code stamps, params, the claims judged and their
  cost, SLURM resources, the GPU-hours estimate, the paid-work guard, the pilot's plan), above all the others;
  Snakemake's internals in ``pipeline.snakemake_api`` alone. It loads no torch, verl, vLLM or transformers.
- ``core``: what both scales share: data formats, grading, the code sandbox, the reward, the run
  spec and config, the metrics contract and the measures, resume fingerprints, each rule's image
  reference, job plumbing (logs, the warm start of a local study's jobs).
- ``mini``: the CPU miniature: reasoning-gym tasks, the tokenizer and tiny models, generation,
  the paper's algorithms, the trainer, evaluation and the power-sampling proposal with transformers.
- ``paper``: the GPU scale: hub downloads, paper datasets, verl launch, plugin and metrics, the
  preflight, vLLM evaluation and proposal at its top (the modules jobs run by name); ``paper.verl``
  (verl's code outside its trainer), ``paper.cost`` (the GPU budget, the pilot's speed and report, the
  paid-work guard), ``paper.images`` (building the images, their locks and %test imports).
- ``study``: what turns runs into the paper's findings: the registry of every figure and table
  (``registry``, whose ``@artifact`` functions the rules build), the analysis, the figures by section,
  the tables, the power-sampling study, the audit. It loads no torch, verl, vLLM or grader.

``pipeline`` imports any of them; ``mini`` and ``paper`` import only ``core``; ``study`` imports only ``core``.
"""

from pathlib import Path

# The checkout, found from this package's own location (the one place that knows it).
PACKAGE_DIR = Path(__file__).resolve().parent
WORKFLOW_DIR = PACKAGE_DIR.parent
PROJECT_DIR = WORKFLOW_DIR.parent
