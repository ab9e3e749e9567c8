"""The audit rule's job: every claim of the ledger (claims.yaml) beside what this study measured, with a verdict, as
CSV, Markdown and HTML."""

from __future__ import annotations

from pathlib import Path

import yaml

from ...core import atomic, config, logs
from ...core.run import Run
from .data import Study
from .ledger import run_audit
from .render import to_html, to_markdown
from .verdicts import verdict_counts


def study_of(p, ledger: dict, inputs) -> Study:
    """What the audit reads: the rule's params ``p`` and its input files, each benchmark and model with its role."""
    roles = ledger["roles"]
    if p.scale == "paper":
        bench_roles = {name: r["paper"] for name, r in roles["benchmarks"].items()}
    else:
        plays = {spec: b for b, spec in p.plays.items()}
        bench_roles = {name: plays[r["plays"]] for name, r in roles["benchmarks"].items() if r["plays"] in plays}
    return Study(
        scale=p.scale,
        artifacts=p.artifacts,
        specs={r: Run.from_params(s) for r, s in p.specs.items()},
        metrics_paths=dict(zip(p.runs, inputs.metrics)),
        summary_paths=dict(zip(p.evaluated, inputs.summaries, strict=True)),
        model_paths=dict(zip(p.models, inputs.models)),
        val_samples=p.val_samples,
        bench_sizes=p.bench_sizes,
        bench_roles=bench_roles,
        # a scale with no stand-in for a paper model (small: one model) judges no claim about that model
        model_roles={name: r[p.scale] for name, r in roles["models"].items() if p.scale in r},
        fit_steps=p.fit_steps,
        power=p.power,
        power_paths={Path(f).stem: f for f in inputs.power},  # a method's answers (core.paths.POWER_SAMPLES)
    )


def main(snakemake) -> None:
    log = logs.setup(snakemake.log[0])
    with open(snakemake.input.ledger) as fh:
        ledger = yaml.safe_load(fh)
    config.validate_against(ledger, snakemake.input.schema, "claims.yaml")
    p, out = snakemake.params, snakemake.output
    study = study_of(p, ledger, snakemake.input)
    table = run_audit(ledger, study, p.not_run)
    atomic.write_text(out.csv, table.to_csv(index=False))
    atomic.write_text(out.md, to_markdown(table, p.scale, study.replicates, study.shared_base_models))
    atomic.write_text(out.html, to_html(table, p.scale, study.replicates, study.shared_base_models))
    log.info("verdicts %s", verdict_counts(table))
