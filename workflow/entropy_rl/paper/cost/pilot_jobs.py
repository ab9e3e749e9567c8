"""The GPU pilot's CPU jobs: the first problems of each benchmark, for the pilot's evaluation (rule pilot_benchmark),
and the report of what passed, how fast it ran and what the study would cost on this cluster (rule pilot_report)."""

from __future__ import annotations

from ...core import atomic, formats, logs
from ...core.scale import build
from . import pilot_measures, pilot_report


def pilot_benchmark_main(snakemake) -> None:
    log = logs.setup(snakemake.log[0])
    frame = formats.load_verl_parquet(snakemake.input.benchmark).head(snakemake.params.problems)
    atomic.to_parquet(frame, snakemake.output[0])
    log.info("the first %d problems of %s", len(frame), snakemake.input.benchmark)


def pilot_report_main(snakemake) -> None:
    log = logs.setup(snakemake.log[0])
    stages = [pilot_measures.Stage(**stage) for stage in snakemake.params.stages]
    out = snakemake.output
    speed = snakemake.input.speed[0] if snakemake.input.speed else None
    scale = build("paper", snakemake.params.scope)
    summary = pilot_report.write(stages, scale, out.md, out.html, out.estimate, speed=speed)
    log.info(
        "pilot: %s stages passed; measured MFUs: rollout %.3f, training %.3f",
        summary["pilot_stages"],
        summary["rollout_mfu"],
        summary["train_mfu"],
    )
