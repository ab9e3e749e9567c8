# Helpers and input functions shared by the rules. Rules stay thin: they name
# files and per-run params; the work happens in the entropy_rl package.
import os

from entropy_rl import config as config_check
from entropy_rl import spec as run_spec

config_check.validate(config)

SCALE = config["scale"]
S = config[SCALE]
RUNS = sorted(S["runs"])
MODELS = sorted(S["models"])
BENCHMARKS = sorted(S["data"]["benchmarks"])
PKG = os.path.join(workflow.basedir, "workflow", "entropy_rl")



def canonical(obj):
    """Params with keys sorted at every level: Snakemake compares params by their
    text, so a reordered but equal config must not look like a change."""
    if isinstance(obj, dict):
        return {k: canonical(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list):
        return [canonical(v) for v in obj]
    return obj


def code(*modules):
    """The package modules a job runs, as inputs: editing one reruns the job."""
    return [os.path.join(PKG, f"{m}.py") for m in modules]


def bench_files():
    return expand("results/data/benchmarks/{benchmark}.parquet", benchmark=BENCHMARKS)


def protocols():
    return canonical({b: S["data"]["benchmarks"][b]["protocol"] for b in BENCHMARKS})


def run_settings(wildcards):
    return canonical(run_spec.resolve_run(S, wildcards.run))


def run_model_dir(wildcards):
    return f"results/models/{S['runs'][wildcards.run]['model']}"


def figure_runs(figure):
    return S["figures"][figure]["runs"]


def run_metrics(figure):
    return expand("results/runs/{run}/metrics.parquet", run=figure_runs(figure))


def all_targets():
    targets = expand("results/eval/{run}/summary.parquet", run=RUNS)
    targets += ["results/analysis/fits.csv"]
    targets += expand("results/figures/{figure}.pdf", figure=sorted(S["figures"]))
    return targets


def figure_rule_input(figure):
    return {"metrics": run_metrics(figure), "code": code("figures", "analysis")}


def figure_params(figure, what):
    runs = figure_runs(figure)
    return {
        "runs": runs,
        "labels": {r: run_label(r) for r in runs},
        "caption": f"Mini scale. {what} Runs: {', '.join(runs)}.",
    }


def run_label(run):
    r = S["runs"][run]
    treatment = "" if r["treatment"] == "none" else f" + {r['treatment']}"
    return f"{r['model']} {r['algorithm'].upper()}{treatment}"
