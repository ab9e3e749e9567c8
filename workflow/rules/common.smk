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


wildcard_constraints:
    run="|".join(map(re.escape, RUNS)),
    model="|".join(map(re.escape, MODELS)),


def code(*modules):
    """The package modules a rule runs, as inputs: editing one reruns the rule."""
    return [os.path.join(PKG, f"{m}.py") for m in modules]


def bench_files():
    return expand("results/data/benchmarks/{benchmark}.parquet", benchmark=BENCHMARKS)


def protocols():
    return {b: S["data"]["benchmarks"][b]["protocol"] for b in BENCHMARKS}


def run_settings(wildcards):
    return run_spec.resolve_run(S, wildcards.run)


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
