from pathlib import Path

import yaml
from entropy_rl.core import atomic, config, logs
from entropy_rl.study import audit

log = logs.setup(snakemake.log[0])
with open(snakemake.input.ledger) as fh:
    ledger = yaml.safe_load(fh)
config.validate_against(ledger, snakemake.input.schema, "claims.yaml")
p = snakemake.params
models = sorted({s["model"] for s in p.specs.values()})
roles = ledger["roles"]
if p.scale == "paper":
    bench_roles = {name: r["paper"] for name, r in roles["benchmarks"].items()}
else:
    plays = {spec: b for b, spec in p.plays.items()}
    bench_roles = {name: plays[r["plays"]] for name, r in roles["benchmarks"].items() if r["plays"] in plays}
study = audit.Study(
    scale=p.scale,
    artifacts=p.artifacts,
    specs=p.specs,
    metrics_paths=dict(zip(p.runs, snakemake.input.metrics)),
    summary_paths=dict(zip(p.evaluated, snakemake.input.summaries, strict=True)),
    model_paths=dict(zip(p.models, snakemake.input.models)),
    val_samples=p.val_samples,
    bench_sizes=p.bench_sizes,
    bench_roles=bench_roles,
    model_roles={name: r[p.scale] for name, r in roles["models"].items()},
    fit_steps=p.fit_steps,
    power=p.power,
    power_paths={Path(f).stem: f for f in snakemake.input.power},  # results/power/samples/{method}.parquet
)
table = audit.run_audit(ledger, study, p.not_run)
atomic.write_text(snakemake.output.csv, table.to_csv(index=False))
atomic.write_text(snakemake.output.md, audit.to_markdown(table, p.scale, study.replicates, study.shared_base_models))
atomic.write_text(snakemake.output.html, audit.to_html(table, p.scale, study.replicates, study.shared_base_models))
log.info("verdicts %s", audit.verdict_counts(table))
