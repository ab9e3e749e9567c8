# Helpers and input functions shared by the rules. Rules stay thin: they name
# files and per-run params; the work happens in the entropy_rl package.
import functools
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from entropy_rl import artifacts
from entropy_rl import budget
from entropy_rl import config as config_check
from entropy_rl import containers
from entropy_rl import hub
from entropy_rl import launch
from entropy_rl import preflight
from entropy_rl import spec as run_spec

config_check.validate(config)

SCALE = config["scale"]
MINI = SCALE == "mini"
S = config[SCALE]
RUNS = sorted(S["runs"])
MODELS = sorted(S["models"])
BENCHMARKS = sorted(S["data"]["benchmarks"])
ARTIFACT_NAMES = [name for name in artifacts.ARTIFACTS if name in S["artifacts"]]
PKG = os.path.join(workflow.basedir, "workflow", "entropy_rl")


def image(name):
    """The Apptainer image a rule runs in (used with --software-deployment-method apptainer);
    its reference changes with its definition, so a rebuilt image reruns what used it."""
    return containers.image_ref(name, workflow.basedir)



def run_image(wildcards):
    """PRIME runs on the verl its recipe supports (containers/prime.def); every other run on verl 0.9.1."""
    return image("prime" if S["runs"][wildcards.run]["algorithm"] == "prime" else "train")


def canonical(obj):
    """Params with keys sorted at every level: Snakemake compares params by their
    text, so a reordered but equal config must not look like a change."""
    if isinstance(obj, dict):
        return {k: canonical(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list):
        return [canonical(v) for v in obj]
    return obj


def code(*modules):
    """The package modules that shape a job's outputs, as inputs: editing one reruns the job.
    Plumbing that cannot change an output's content (logs, atomic, checkpoints) is left out."""
    return [os.path.join(PKG, f"{m}.py") for m in modules]


def bench_files():
    return expand("results/data/benchmarks/{benchmark}.parquet", benchmark=BENCHMARKS)


def protocols():
    return canonical({b: S["data"]["benchmarks"][b]["protocol"] for b in BENCHMARKS})


def run_settings(wildcards):
    return canonical(run_spec.resolve_run(S, wildcards.run))


def run_model_dir(wildcards):
    return f"results/models/{S['runs'][wildcards.run]['model']}"


def run_train_data(wildcards):
    train_set = run_spec.resolve_run(S, wildcards.run).get("train_data")
    return "results/data/train.parquet" if train_set is None else f"results/data/train/{train_set}.parquet"


def artifact_runs(name):
    return S["artifacts"][name]["runs"]


def run_metrics(runs):
    return expand("results/runs/{run}/metrics.parquet", run=runs)


def all_targets():
    targets = expand("results/eval/{run}/summary.parquet", run=RUNS)
    targets += ["results/analysis/fits.csv", "results/audit/audit.md"]
    for name in ARTIFACT_NAMES:
        targets += artifacts.output_files(name)
    return targets + power_targets()


def artifact_inputs(name):
    """Only what the artifact reads: its runs' metrics (or evaluations), their models' configs."""
    runs = artifact_runs(name)
    needs = artifacts.ARTIFACTS[name].needs
    inputs = {"code": code("figures", "tables", "analysis", "artifacts")}
    if "metrics" in needs:
        inputs["metrics"] = run_metrics(runs)
    if "eval" in needs:
        inputs["summaries"] = expand("results/eval/{run}/summary.parquet", run=runs)
    if "models" in needs:
        inputs["models"] = [f"results/models/{S['runs'][r]['model']}" for r in runs]
    return inputs


def artifact_params(name):
    runs = artifact_runs(name)
    specs = {r: run_spec.resolve_run(S, r) for r in runs}
    labels = {r: run_label(r) for r in runs}
    return {
        "runs": runs,
        "labels": labels,
        "specs": canonical(specs),
        "fit_steps": S["analysis"]["early_fit_steps"],
        "benchmark_names": benchmark_names(),
        "caption": artifacts.caption(name, SCALE, specs, labels),
    }


def audit_params():
    """Per-run settings and the benchmark facts the audit's tolerances need; never the whole config.
    The power-sampling study (when the scale has one): its methods and their settings, which method
    plays which role, the methods each of its artifacts draws, problems answered per benchmark and
    answers per problem."""
    bench = S["data"]["benchmarks"]
    val = S["train"]["val_protocol"]["n"]
    power = {}
    if POWER:
        power = {
            "model": POWER["model"],
            "methods": power_methods(),
            "runs": POWER["runs"],
            "artifacts": {name: power_artifact_methods(name) for name in POWER_WHAT},
            "problems": {b: min(POWER["problems"], bench[b].get("size", POWER["problems"])) for b in POWER["benchmarks"]},
            "n": POWER["n"],
        }
    return {
        "scale": SCALE,
        "runs": RUNS,
        "models": MODELS,
        "artifacts": {name: artifact_runs(name) for name in ARTIFACT_NAMES},
        "specs": canonical({r: run_spec.resolve_run(S, r) for r in RUNS}),
        "fit_steps": S["analysis"]["early_fit_steps"],
        # problems per benchmark, and validation samples per benchmark at each validation step
        "bench_sizes": {b: bench[b]["size"] for b in BENCHMARKS},
        "val_samples": {b: min(bench[b]["size"], S["train"].get("val_size", bench[b]["size"])) * val for b in BENCHMARKS},
        "plays": {b: bench[b]["plays"] for b in BENCHMARKS if "plays" in bench[b]},
        "power": canonical(power),
    }


def benchmark_names():
    """Column headers: a mini benchmark says which paper benchmark it stands in for."""
    spec = S["data"]["benchmarks"]
    return {b: f"{b} ({spec[b]['plays']})" if "plays" in spec[b] else b for b in BENCHMARKS}


def run_label(run):
    r = S["runs"][run]
    treatment = "" if r["treatment"] == "none" else f" + {r['treatment']}"
    return f"{r['model']} {r['algorithm'].upper()}{treatment}"


# ---- SLURM jobs never see the hub token -----------------------------------------------------
# snakemake-executor-plugin-slurm submits every job with `sbatch --export=ALL` and refuses
# `--export` in slurm_extra, so a job would get the submitting shell's HF_TOKEN, and slurmctld
# would keep it in the job's saved environment. `sbatch --export-file` makes the environment
# sbatch submits the file's alone: the main process writes its own there, less the token
# variables, before the first submission, and deletes it when the run ends. Every SLURM job's
# slurm_extra carries the flag: the profile's default-resources (slurm/config.yaml, this same
# string) and any rule that sets its own (train_resources). Only the local download rules, run
# by the main process, see the token.
SLURM_JOB_ENV = ".snakemake/slurm_job_environment"
SLURM_JOB_ENV_FLAG = f"--export-file={SLURM_JOB_ENV}"


onstart:
    if not workflow.local_exec:
        hub.write_environment_without_token(SLURM_JOB_ENV)


onsuccess:
    Path(SLURM_JOB_ENV).unlink(missing_ok=True)


onerror:
    Path(SLURM_JOB_ENV).unlink(missing_ok=True)


# ---- paper scale: hub downloads, SLURM resources, the GPU-hours estimate -------------------


def lock_file(repo_id):
    """One lock file per hub repository, so parallel downloads never write the same file."""
    return os.path.join(S["hub"]["lock"], "--".join(Path(repo_id).parts) + ".yaml")


def source_dir(part):
    return f"results/data/sources/{S['data']['parts'][part]['source']}"


def source_checked(part):
    """The record that a part's downloaded source matches what the config reads from it."""
    return f"results/preflight/sources/{S['data']['parts'][part]['source']}.txt"


def hub_download_dir(kind, name):
    """Where a downloaded model or dataset source lands."""
    return f"results/models/{name}" if kind == "models" else f"results/data/sources/{name}"


def check_hub_access():
    """A gated repository still to download, with no token: stop before any job is submitted."""
    mirror = S["hub"]["mirror"]
    for kind, entries in (("models", S["models"]), ("data", S["data"]["sources"])):
        for name, entry in entries.items():
            staged = mirror and os.path.isdir(os.path.join(mirror, entry["hub"]))
            if not os.path.exists(hub_download_dir(kind, name)) and not staged:
                hub.require_token(entry["hub"], entry.get("gated", False))


def run_gpus(run):
    model = S["models"][S["runs"][run]["model"]]
    return model["nodes"] * model["gpus_per_node"]


def train_hours(run):
    return budget.train_gpu_hours(
        run_spec.resolve_run(S, run), S["models"][S["runs"][run]["model"]], S["budget"], sum(b["size"] for b in S["data"]["benchmarks"].values())
    )


def eval_hours(run):
    sizes = {b: spec["size"] for b, spec in S["data"]["benchmarks"].items()}
    protocols = {b: spec["protocol"] for b, spec in S["data"]["benchmarks"].items()}
    return budget.eval_gpu_hours(sizes, protocols, S["models"][S["runs"][run]["model"]], S["budget"])


@functools.cache
def train_resources(run):
    """Whole nodes for a run (8 CPUs and 64 GB per GPU), requeueable, for the estimated time."""
    model = S["models"][S["runs"][run]["model"]]
    gpus = run_gpus(run)
    return {
        "nodes": model["nodes"],
        "gpu": gpus,
        "cpus_per_task": 8 * model["gpus_per_node"],
        "mem_mb_per_cpu": 8000,
        "slurm_extra": f"--requeue {SLURM_JOB_ENV_FLAG}",  # one dict per run, cached: six resource lambdas read it
        "runtime": budget.runtime_minutes(train_hours(run), gpus, S["budget"]["walltime_margin"]),
    }


def requested_runs():
    """The runs the command line's targets need and that have not finished training."""
    targets = workflow.dag_settings.targets or {"all"}
    wanted = set()
    for target in targets:
        if target in ("all", "audit", "fit_table") or target.endswith("fits.csv") or target.startswith("results/audit"):
            wanted |= set(RUNS)
        parts = Path(target).parts
        wanted |= {run for run in RUNS if run in parts or Path(target).stem == run}
        for name, spec in S["artifacts"].items():
            if name in target:
                wanted |= set(spec["runs"])
    return sorted(r for r in wanted if not os.path.exists(f"results/runs/{r}/metrics.parquet"))


def requested_power_methods():
    """The power-sampling jobs the command line's targets need whose samples do not exist yet."""
    targets = workflow.dag_settings.targets or {"all"}
    if not POWER or not any(t in ("all", "audit") or "power" in t or t.startswith("results/audit") for t in targets):
        return []
    return [m for m in power_methods() if not os.path.exists(f"results/power/samples/{m}.parquet")]


def print_gpu_budget():
    runs, methods = requested_runs(), requested_power_methods()
    if not runs and not methods:
        return
    train = sum(train_hours(r) for r in runs)
    evaluation = sum(eval_hours(r) for r in runs)
    power = sum(power_hours(m) for m in methods)
    print(
        f"GPU-hours estimate for {len(runs)} run(s) still to train: {train:,.0f} training + {evaluation:,.0f} evaluation"
        f" = {train + evaluation:,.0f}; {len(methods)} power-sampling job(s): {power:,.0f}"
        f" (FLOPs at {S['budget']['train_mfu']:.0%}/{S['budget']['rollout_mfu']:.0%} of"
        f" {S['budget']['gpu_peak_tflops']} TFLOPS per GPU; see config.yaml paper.budget)",
        file=sys.stderr,
    )


_BUDGET_SHOWN = []


def show_budget_once():
    """The GPU-hours estimate and the launch preflight, once: input functions are evaluated while the DAG is built, after the
    command line's targets are known and before any job is submitted (a dry run included)."""
    if not _BUDGET_SHOWN:
        _BUDGET_SHOWN.append(True)
        print_gpu_budget()
        if workflow.is_main_process:
            check_launches()


def train_data_with_budget(wildcards):
    """run_train_data, and the GPU-hours estimate the first time an input function asks."""
    show_budget_once()
    return run_train_data(wildcards)


# ---- paper scale: the preflight (entropy_rl.preflight) --------------------------------------


def preflight_scope(wildcards):
    """What one run's preflight reads: the run, its model and treatment, the defaults, the lengths."""
    return canonical({
        **run_spec.run_scope(S, wildcards.run),
        "data": {"max_prompt_length": S["data"]["max_prompt_length"], "benchmarks": {b: {} for b in BENCHMARKS}},
        "eval": {"max_new_tokens": S["eval"]["max_new_tokens"]},
    })  # fmt: skip


def preflight_power_scope():
    return canonical({
        "runs": {},
        "models": {POWER["model"]: S["models"][POWER["model"]]},
        "data": {"max_prompt_length": S["data"]["max_prompt_length"]},
        "power_sampling": {"model": POWER["model"], "max_new_tokens": POWER["max_new_tokens"]},
    })  # fmt: skip


def check_launches():
    """Before any job: every run still to train, its exact verl command through verl's own validation,
    reward loader and loss plugin (the part of the preflight that needs no download)."""
    runs = requested_runs()
    if not runs:
        return
    failed = {run: preflight.launch_problems_cached(S, run, ".snakemake/preflight-launches") for run in runs}
    failed = {run: problems for run, problems in failed.items() if problems}
    if failed:
        lines = [f"  {run}: {p}" for run, problems in failed.items() for p in problems]
        raise WorkflowError(f"preflight: {len(failed)} of {len(runs)} run(s) would fail at launch; nothing was submitted:\n" + "\n".join(lines))
    print(f"preflight: {len(runs)} run(s) to train composed and validated by verl, reward and loss plugin loaded", file=sys.stderr)


# Only in the process the user started: SLURM jobs (--mode remote) and local subprocess jobs
# (--mode subprocess) parse the Snakefile again, without the token, while a gated download may
# still be running on the submitting host.
if not MINI and workflow.is_main_process:
    check_hub_access()


# ---- power sampling beside RL (Karan & Du, 2025) --------------------------------------------
POWER = S.get("power_sampling")


@functools.cache
def power_methods():
    """Every sampling method of the power-sampling study, by name: plain and low-temperature
    sampling of the base model, power sampling, the RL checkpoints, and the alpha and N_MCMC
    sweeps (their point at the main setting is `power` itself)."""
    if not POWER:
        return {}
    alpha, main = POWER["alpha"], {"kind": "power", "alpha": POWER["alpha"], "block_size": POWER["block_size"], "n_mcmc": POWER["n_mcmc"]}
    methods = {"base": {"kind": "sample", "temperature": 1.0}, "low-temp": {"kind": "sample", "temperature": 1.0 / alpha}, "power": main}
    for name, run in POWER["runs"].items():
        methods[name] = {"kind": "sample", "temperature": 1.0, "run": run}
    for a in POWER["sweeps"]["alpha"]:
        if a != alpha:
            methods[f"power-alpha{a:g}"] = dict(main, alpha=a)
    for n in POWER["sweeps"]["n_mcmc"]:
        if n != POWER["n_mcmc"]:
            methods[f"power-mcmc{n}"] = dict(main, n_mcmc=n)
    return methods


def power_main_methods():
    return ["base", "low-temp", "power", *POWER["runs"]]


def power_labels():
    """Display names: what each method is, with its settings."""
    labels = {"base": "Base (T = 1)", "low-temp": f"Low temperature (T = 1/{POWER['alpha']:g})"}
    for name, m in power_methods().items():
        if m["kind"] == "power":
            labels[name] = f"Power sampling (alpha {m['alpha']:g}, B {m['block_size']}, N_MCMC {m['n_mcmc']})"
        elif "run" in m:
            labels[name] = run_label(m["run"])
    return labels


def power_policy(wildcards):
    """The model a method samples: a run's final checkpoint, or the base model."""
    method = power_methods()[wildcards.method]
    return f"results/runs/{method['run']}/final" if "run" in method else f"results/models/{POWER['model']}"


def power_policy_with_budget(wildcards):
    """power_policy, and at paper scale the GPU-hours estimate the first time an input function asks."""
    show_budget_once()
    return power_policy(wildcards)


def power_answers():
    """Answers each method gives: n to each of the first `problems` problems of every benchmark."""
    sizes = [S["data"]["benchmarks"][b].get("size", POWER["problems"]) for b in POWER["benchmarks"]]
    return POWER["n"] * sum(min(POWER["problems"], size) for size in sizes)


def power_hours(method):
    model = S["models"][POWER["model"]]
    return budget.power_gpu_hours(power_methods()[method], power_answers(), model, S["budget"], POWER["max_new_tokens"])


def power_samples(methods):
    return expand("results/power/samples/{method}.parquet", method=methods)


POWER_WHAT = {
    "power01_accuracy": "Single-shot accuracy (%, the mean over all answers) per benchmark, tokens per answer, tokens drawn per answer and their ratio to plain sampling, and the Metropolis-Hastings acceptance rate.",
    "power02_pass_at_k": "pass@k against k per benchmark (unbiased estimator).",
    "power03_likelihoods": "The base model's log-likelihood per token of each method's answers.",
    "power04_hyperparameters": "Power-sampling accuracy against alpha, and against the number of MCMC steps per block.",
}


def power_caption(name):
    """Scale, what is shown, and the study's shared settings."""
    runs = ", ".join(f"{n}: {run_label(r)}" for n, r in POWER["runs"].items())
    return (
        f"{SCALE.capitalize()} scale, after Karan & Du (2025). {POWER_WHAT[name]} Base model {POWER['model']}; "
        f"{POWER['n']} answers to each of the first {POWER['problems']} problems of {', '.join(POWER['benchmarks'])}, "
        f"up to {POWER['max_new_tokens']} tokens, seed {POWER['seed']}. Power sampling targets p^alpha with a "
        f"temperature-1/alpha proposal in blocks of {POWER['block_size']} tokens (alpha {POWER['alpha']:g}, "
        f"{POWER['n_mcmc']} MCMC steps per block unless swept). RL checkpoints sampled at temperature 1: {runs}."
    )


def power_artifact_methods(name):
    """The methods an artifact of the study shows: the sweeps for the hyperparameter figure, else the main ones."""
    if name == "power04_hyperparameters":
        return [m for m, s in power_methods().items() if s["kind"] == "power"]
    return power_main_methods()


def power_targets():
    """The study's table (CSV and Markdown) and figures (PDF and PNG), one per entry of POWER_WHAT."""
    if not POWER:
        return []
    return [f"results/{'tables' if n.startswith('power01') else 'figures'}/{n}.{ext}" for n in POWER_WHAT
            for ext in (("csv", "md") if n.startswith("power01") else ("pdf", "png"))]  # fmt: skip
