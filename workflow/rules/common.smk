# Config validation, constants, and the input and params functions the rules share (the paths they
# name are in paths.smk). Rules stay thin: they name files and per-run params; the work happens in the entropy_rl
# package. The claims judged and the jobs they need are in claims.smk; cluster concerns (SLURM, the hub token, the
# GPU budget, the launch preflight) in cluster.smk; the pilot's report in pilot.smk.
import functools
import os
from pathlib import Path

from entropy_rl.core import config as config_check
from entropy_rl.core import modules as modules_closure
from entropy_rl.core import power_methods as power_registry
from entropy_rl.core import spec as run_spec
from entropy_rl.core import images
from entropy_rl.paper import launch
from entropy_rl.paper import reward_launch
from entropy_rl.study import artifacts

config_check.validate(config, artifacts.PAPER)  # the schema's artifact names are the registry's
# Each module's parsed form, kept by its text, for the code stamps of every later plan and job (core.modules: each
# text is parsed once; an entry that is not one the module wrote is parsed again).
modules_closure.CACHE_DIR = Path(".snakemake/behaviour-templates")

SCALE = config["scale"]
MINI = SCALE == "mini"
# The study's base seed moves every seed of the scale at once (`snakemake --config seed=1`), and each
# run and base model is repeated `replicates` times (the scale's, or `--config replicates=N`), each
# replicate a run (or model) of its own.
SEED = config.get("seed", 0)
REPLICATES = config.get("replicates") or config[SCALE].get("replicates", 1)
S = run_spec.with_pilot(run_spec.with_replicates(run_spec.with_instruct_models(config[SCALE]), SEED, REPLICATES))
RUNS = sorted(r for r in S["runs"] if not run_spec.is_pilot(r))  # the study's; the GPU pilot's are PILOT_RUNS
PILOT = S.get("pilot")  # paper scale: every GPU rule once, small (workflow/rules/pilot.smk)
PILOT_RUNS = sorted(PILOT["runs"]) if PILOT else []
MODELS = sorted(S["models"])
BENCHMARKS = sorted(S["data"]["benchmarks"])
POWER = S.get("power_sampling")  # the power-sampling study beside RL (Karan & Du, 2025), if the scale has one
ARTIFACT_NAMES = [name for name in artifacts.PAPER if name in S["artifacts"]]  # the paper's, with their runs
# Every artifact the workflow builds (figures.smk makes one rule per artifact), the paper's and the power study's.
BUILDABLE_ARTIFACTS = ARTIFACT_NAMES + (artifacts.POWER if POWER else [])
REPORT_LABEL = "rule · where in the paper"  # the one label of each row of `snakemake --report` (report_labels)


def run_model(run):
    """The name of the base model a run trains."""
    return S["runs"][run]["model"]


def instruct_inputs(wildcards):
    """What an instruct model is tuned from: its base model and the instruction corpus (none for a base model)."""
    base = S["models"][wildcards.model].get("instruct_of")
    return {"base": MODEL_DIR.format(model=base), "instruct": INSTRUCT_CORPUS} if base else {}


def run_model_spec(run):
    """The config entry of the base model a run trains, with the run's own placement (core.spec.run_model_entry)."""
    return run_spec.run_model_entry(S, run)


def run_label(run):
    r = S["runs"][run]
    treatment = "" if r["treatment"] == "none" else f" + {r['treatment']}"
    data = f" ({r['train_data']})" if "train_data" in r else ""  # a run's own training set: code, Appendix C's
    return f"{run_model(run)} {r['algorithm'].upper()}{treatment}{data}"


def image(name):
    """The Apptainer image a rule runs in (used with --software-deployment-method apptainer);
    its reference changes with its definition, so a rebuilt image reruns what used it. Relative to the working
    directory (where Snakemake parses and every job runs): Snakemake's software-env trigger compares the reference's
    text, so an absolute path would outdate every job when the checkout is moved or mounted elsewhere."""
    return os.path.relpath(images.image_ref(name, workflow.basedir))


def run_image(wildcards):
    """PRIME runs on the verl its recipe supports (containers/prime.def); every other run on verl 0.9.1."""
    return image("prime" if launch.trainer(S["runs"][wildcards.run]) == "prime" else "train")


@functools.cache
def trainer_code(key, modules):
    """The code a trainer's runs execute (``modules``: launch.TRAINER_MODULES of the trainer, with the launch and the
    log translation around it), one stamp per ``key``: train_verl.json for verl 0.9.1's runs, train_prime.json for
    PRIME's, train_verl_random_reward.json for the random-reward control (paper.reward_launch)."""
    return code(key, "paper.launch", "paper.verl_metrics", *modules)


def train_code(wildcards):
    """A run's code input: its own trainer's, so an edit of the loss plugin outdates no PRIME run and an edit of
    PRIME's main no verl 0.9.1 run; a random-reward run's adds its reward's module, which no other run loads."""
    spec = run_settings(wildcards)
    return trainer_code(reward_launch.stamp_key(spec), reward_launch.trainer_modules(spec))


def canonical(obj):
    """Params with keys sorted at every level: Snakemake compares params by their
    text, so a reordered but equal config must not look like a change."""
    if isinstance(obj, dict):
        return {k: canonical(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list):
        return [canonical(v) for v in obj]
    return obj


def code(key, *modules):
    """The code that shapes a job's outputs, as an input: the modules the rule's script calls (``layer.module``, or a
    full dotted name) and everything they import in the package, less plumbing (core.modules.PLUMBING), stood for by
    one stamp per ``key`` (the rule; where a rule's jobs run different code, what each runs: train_code) that is
    rewritten only when what that code computes changes (core.modules.stamp). A comment, a docstring or a moved
    module reruns nothing; a change of behaviour reruns the jobs that run it, and at paper scale the GPU rules' jobs
    only when asked (cluster.smk, paid_work_guard)."""
    dotted = [m if m.startswith("entropy_rl.") else f"entropy_rl.{m}" for m in modules]
    return modules_closure.stamp(CODE_STAMP.format(key=key), *dotted)


# ---- input functions --------------------------------------------------------------------------


def fit_law_name():
    """What fit_law's outputs are named by: the stem of the log given (`--config fit_law_log=PATH`)."""
    return Path(config["fit_law_log"]).stem if "fit_law_log" in config else "no-log-given"


def fit_law_log(wildcards):
    """The log fit_law reads; asked for without one, it says how to give it."""
    if "fit_law_log" not in config:
        raise ValueError("fit_law fits a run's log: snakemake fit_law --config fit_law_log=PATH")
    return config["fit_law_log"]


def bench_files():
    return expand(BENCHMARK_FILE, benchmark=BENCHMARKS)


def run_bench_files(wildcards):
    """The benchmarks a run is evaluated on: all of them, or for a pilot run their first problems (pilot.smk)."""
    return expand(PILOT_BENCHMARK_FILE if wildcards.run in PILOT_RUNS else BENCHMARK_FILE, benchmark=BENCHMARKS)


def run_validation_files(wildcards):
    """The benchmarks a mini run validates on: those of the domain it trains on (math or code)."""
    domain = run_spec.train_domain(S, wildcards.run)
    return expand(BENCHMARK_FILE, benchmark=run_spec.domain_benchmarks(S, domain))


def run_model_dir(wildcards):
    return MODEL_DIR.format(model=run_model(wildcards.run))


def run_train_data(wildcards):
    train_set = run_spec.resolve_run(S, wildcards.run).get("train_data")
    return TRAIN_DATA if train_set is None else TRAIN_SET.format(train_set=train_set)


def run_metrics(runs):
    return expand(RUN_METRICS, run=runs)


def source_dir(part):
    return SOURCE_DIR.format(source=S["data"]["parts"][part]["source"])


def source_checked(part):
    """The record that a part's downloaded source matches what the config reads from it."""
    return SOURCE_CHECKED.format(source=S["data"]["parts"][part]["source"])


def all_targets():
    """The study: the evaluations, fits, figures, tables and audit of the claims it judges (all, unless chosen)."""
    targets = expand(EVAL_SUMMARY, run=EVALUATED_RUNS) + [FIT_TABLE, AUDIT_MD]
    built = [name for name in BUILDABLE_ARTIFACTS if name in BUILT_ARTIFACTS]
    pages = [TABLE_PAGE.format(name=name) for name in built if artifacts.ARTIFACTS[name].kind == "table"]
    return targets + [f for name in built for f in artifacts.output_files(name)] + pages


def artifact_runs(name):
    return S["artifacts"][name]["runs"]


def with_replicates(runs):
    """The runs and every replicate of each (core.spec.with_replicates), in order."""
    return [rep for run in runs for rep in run_spec.replicates(S["runs"], run)]


def artifact_inputs(name):
    """Only what the artifact reads (its registered ``reads``), every replicate of each: its runs' metrics (or
    evaluations) and their models' configs, or the answers of the power-sampling methods it draws; and its code."""
    artifact = artifacts.ARTIFACTS[name]
    inputs = {"code": code(name, *artifact.modules)}
    if artifact.power:
        return inputs | {"samples": power_samples(POWER_STUDY.drawn(artifact.methods))}
    runs = with_replicates(artifact_runs(name))
    if "metrics" in artifact.reads:
        inputs["metrics"] = run_metrics(runs)
    if "eval" in artifact.reads:
        inputs["summaries"] = expand(EVAL_SUMMARY, run=runs)
    if "models" in artifact.reads:
        inputs["models"] = [MODEL_DIR.format(model=run_model(r)) for r in runs]
    return inputs


def report_labels(name):
    """An artifact's row in `snakemake --report`: its rule (what `snakemake <rule>` draws again, and the order the
    rows sort in: the report compares labels as text, so "Figure 12" would come before "Figure 2") and where in the
    paper. One label: the report takes a second label with two values, one on each of two rows (as Tables' two
    rows have), for a toggle, and then shows neither (Snakemake 9.27). A longer label would widen the menu over
    the page it opens; the caption is one click away."""
    return {REPORT_LABEL: f"{name} · {artifacts.ARTIFACTS[name].source}"}


# ---- params functions -------------------------------------------------------------------------


def protocols():
    return canonical({b: S["data"]["benchmarks"][b]["protocol"] for b in BENCHMARKS})


def run_settings(wildcards):
    return canonical(run_spec.resolve_run(S, wildcards.run))


def benchmark_names():
    """Table 2's columns, the math benchmarks (as the paper's): a mini benchmark says which paper benchmark it stands in for."""
    spec = S["data"]["benchmarks"]
    return {b: f"{b} ({spec[b]['plays']})" if "plays" in spec[b] else b for b in run_spec.domain_benchmarks(S, "math")}


def artifact_params(name):
    """What the artifact's function reads beside its inputs (study.inputs.Inputs): labels and caption, the order
    of its input files (run or method -> replicates), and the runs' settings or the methods' sampling settings."""
    if artifacts.ARTIFACTS[name].power:
        methods = POWER_STUDY.drawn(artifacts.ARTIFACTS[name].methods)
        return {
            "replicates": {m: POWER_STUDY.seeds(m) for m in methods},
            "labels": dict(POWER_STUDY.labels),
            "pass_k": POWER["pass_k"],
            "settings": {m: power_methods()[m] for m in methods},
            "caption": POWER_STUDY.caption(artifacts.ARTIFACTS[name].what, SCALE),
        }
    runs = artifact_runs(name)
    specs = {r: run_spec.resolve_run(S, r) for r in runs}
    labels = {r: run_label(r) for r in runs}
    return {
        "runs": runs,
        "replicates": {r: run_spec.replicates(S["runs"], r) for r in runs},
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
            "artifacts": {name: POWER_STUDY.drawn(artifacts.ARTIFACTS[name].methods) for name in artifacts.POWER},
            "problems": POWER_STUDY.problems(bench),
            "n": POWER["n"],
        }
    return {
        "scale": SCALE,
        "runs": STUDY_RUNS,  # the runs whose metrics it reads, in its input's order
        "evaluated": EVALUATED_RUNS,  # the runs whose evaluation summaries it reads, in its input's order
        "models": STUDY_MODELS,
        "artifacts": {name: artifact_runs(name) for name in ARTIFACT_NAMES},
        "specs": canonical({r: run_spec.resolve_run(S, r) for r in RUNS}),
        "fit_steps": S["analysis"]["early_fit_steps"],
        # problems per benchmark of Table 2 (math), and validation samples per benchmark at each validation step
        "bench_sizes": {b: bench[b]["size"] for b in run_spec.domain_benchmarks(S, "math")},
        "val_samples": {b: min(bench[b]["size"], S["train"].get("val_size", bench[b]["size"])) * val for b in BENCHMARKS},
        "plays": {b: bench[b]["plays"] for b in BENCHMARKS if "plays" in bench[b]},
        "power": canonical(power),
        # the claims left out of this study (--config claims=... or budget_gpu_hours=...), with the GPU-hours of
        # the jobs each would add (none at mini scale)
        "not_run": canonical({c: round(h, 1) for c, h in NOT_RUN.items()}) if SELECTING else {},
    }


def lock_file(repo_id):
    """One lock file per hub repository, so parallel downloads never write the same file."""
    return os.path.join(S["hub"]["lock"], "--".join(Path(repo_id).parts) + ".yaml")


def preflight_power_scope():
    """What the power study's preflight reads: its model, the prompt length and the answers' length."""
    return canonical({
        "runs": {},
        "models": {POWER["model"]: S["models"][POWER["model"]]},
        "data": {"max_prompt_length": S["data"]["max_prompt_length"]},
        "power_sampling": {"model": POWER["model"], "max_new_tokens": POWER["max_new_tokens"]},
    })  # fmt: skip


# ---- power sampling beside RL (Karan & Du, 2025): entropy_rl.core.power_methods ---------------
POWER_STUDY = power_registry.build(POWER, {r: run_label(r) for r in POWER["runs"].values()}, REPLICATES, SEED) if POWER else None


def power_methods():
    """Every sampling method of the study, by name (name -> settings); none when the scale has no study."""
    return POWER_STUDY.methods if POWER else {}


def power_benchmark_files(wildcards):
    """The benchmarks a sampling job answers: the study's, or a sweep's own (core.power_methods.Study.benchmarks)."""
    settings = power_job(wildcards.method)["settings"]
    return expand(BENCHMARK_FILE, benchmark=settings.get("benchmarks", POWER["benchmarks"]))


def power_samples(methods):
    """The answers of ``methods`` and of every replicate of each, method by method."""
    return expand(POWER_SAMPLES, method=POWER_STUDY.with_seeds(methods))


def pilot_power_methods():
    """The pilot's sampling jobs (pilot.power): plain sampling of the pilot's model, p^alpha by Algorithm 1 and by the
    later samplers it configures (Power-SMC, SPS), and plain sampling of its RL checkpoint."""
    if not PILOT:
        return {}
    p, run = PILOT["power"], PILOT_RUNS[0]
    model = run_model(run)
    job = {"model": model, "placement": run_model_spec(run), "problems": p["problems"], "n": p["n"],
           "max_new_tokens": p["max_new_tokens"], "seed": S["eval"]["seed"]}  # fmt: skip
    power = {"kind": "power", "alpha": p["alpha"], "block_size": p["block_size"], "n_mcmc": p["n_mcmc"]}
    later = {f"{run_spec.PILOT}{kind}": {**job, "settings": {"kind": kind, "alpha": p["alpha"], **p[kind]}}
             for kind in power_registry.LATER if kind in p}  # fmt: skip
    return {f"{run_spec.PILOT}plain": {**job, "settings": {"kind": "sample", "temperature": 1.0}},
            f"{run_spec.PILOT}power": {**job, "settings": power}, **later,
            f"{run_spec.PILOT}rl": {**job, "settings": {"kind": "sample", "temperature": 1.0, "run": run}}}  # fmt: skip


PILOT_METHODS = pilot_power_methods()


def power_job(method):
    """One sampling job's facts, for the study's methods and the pilot's alike: its settings, the base model, the
    placement of its engines, problems per benchmark, answers per problem, answer length and seed."""
    if method in PILOT_METHODS:
        return PILOT_METHODS[method]
    return {"settings": power_methods()[method], "model": POWER_STUDY.model(method), "placement": S["models"][POWER["model"]],
            "problems": POWER["problems"], "n": POWER["n"], "max_new_tokens": POWER["max_new_tokens"],
            "seed": POWER_STUDY.seed(method)}  # fmt: skip


# At paper scale each sampling module has its own code stamp (core.power_methods.sampler_module): a change to the later
# samplers outdates none of the jobs of plain sampling and Algorithm 1, whose stamp keeps its name.
SAMPLER_CODE = {"paper.power_sampling": "power_sample_vllm", "paper.power_samplers": "power_samplers_vllm"}


def power_sampler_code(wildcards):
    """The code stamp of the module that samples a method at paper scale."""
    return sampler_stamp(power_registry.sampler_module("paper", power_job(wildcards.method)["settings"]["kind"]))


@functools.cache
def sampler_stamp(module):
    return code(SAMPLER_CODE[module], module)


def power_base_model(wildcards):
    """The base model a method's replicate samples, or scores an RL checkpoint's answers with."""
    return MODEL_DIR.format(model=power_job(wildcards.method)["model"])


def power_policy(wildcards):
    """The model a method samples: a run's final checkpoint, or the base model."""
    method = power_job(wildcards.method)["settings"]
    return RUN_FINAL.format(run=method["run"]) if "run" in method else power_base_model(wildcards)


def power_preflight(wildcards):
    """The preflight a sampling job waits for: the study's (its model, context and engines), or for the pilot's jobs
    the pilot run's (the same model, prompt format and tensor-parallel size), so the pilot downloads no other model."""
    return RUN_PREFLIGHT.format(run=PILOT_RUNS[0]) if wildcards.method in PILOT_METHODS else POWER_PREFLIGHT
