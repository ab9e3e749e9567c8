"""The results layout: every file the workflow writes or reads, one template each, for the rule files and the
package alike (``.format()`` or Snakemake's ``expand()``). Nothing else spells a path under ``results/``
(tests/test_layout.py reads every Python and rule file to hold that)."""

RESULTS = "results"  # everything a study writes, relative to the working directory

# ---- data ------------------------------------------------------------------------------------------
BENCHMARK_FILE = "results/data/benchmarks/{benchmark}.parquet"
VALIDATION_SET = "results/data/benchmarks/validation.parquet"
DATA_DIR = "results/data"  # the mini scale's generated data (mini.data.prepare_mini_data)
TRAIN_DATA = "results/data/train.parquet"  # the training set of runs that name none (mini)
TRAIN_SET = "results/data/train/{train_set}.parquet"
PRETRAIN_CORPUS = "results/data/pretrain.parquet"
INSTRUCT_CORPUS = "results/data/instruct.parquet"  # instruction tuning of the mini instruct models
SOURCE_DIR = "results/data/sources/{source}"
SOURCE_CHECKED = "results/preflight/sources/{source}.txt"

# ---- models and runs -------------------------------------------------------------------------------
MODEL_DIR = "results/models/{model}"
TOKENIZER_DIR = "results/models/tokenizer"
RUN_PREFLIGHT = "results/preflight/{run}.txt"  # a run's training (rule preflight)
EVAL_PREFLIGHT = "results/preflight/eval/{run}.txt"  # its evaluation's engine (rule preflight_eval)
RUN_DIR = "results/runs/{run}"
RUN_METRICS = "results/runs/{run}/metrics.parquet"
RUN_FINAL = "results/runs/{run}/final"
RUN_CHECKPOINTS = "results/runs/{run}/checkpoints"  # verl's, where the launch puts them (paper.run_command)
RUN_HYDRA = "results/runs/{run}/hydra"  # verl's hydra output (paper.run_command)
EVAL_SUMMARY = "results/eval/{run}/summary.parquet"
EVAL_SAMPLES = "results/eval/{run}/{benchmark}.parquet"

# ---- analysis, figures, tables and the audit -------------------------------------------------------
RUN_FIT = "results/analysis/fits/{run}.json"
FIT_TABLE = "results/analysis/fits.csv"
FIT_TABLE_PARQUET = "results/analysis/fits.parquet"
FIT_LAW = "results/fit_law/{name}"  # `snakemake fit_law --config fit_law_log=PATH`: <name>.json, .png, .pdf
FIT_LAW_LOG = "results/logs/fit_law/{name}.log"
ARTIFACT_FILE = "results/{kind}s/{name}.{ext}"  # a figure's or a table's (study.registry.Artifact.files)
AUDIT_DIR = "results/audit"
AUDIT_MD = "results/audit/audit.md"
AUDIT_HTML = "results/audit/audit.html"  # the same table, in `snakemake --report`
AUDIT_CSV = "results/audit/audit.csv"
TABLE_PAGE = "results/tables/{name}.html"  # a table's page in `snakemake --report` (figures.smk)
ARTIFACT_LOG = "results/logs/artifacts/{name}.log"  # each figure's and table's (figures.smk)
LEDGER = "claims.yaml"  # the claims the audit judges, in the workflow's base directory
CLAIMS_BUDGET_MD = "results/budget/claims.md"  # what each claim costs to judge (`snakemake claims_budget`)
CLAIMS_BUDGET_CSV = "results/budget/claims.csv"

# ---- power sampling and the GPU pilot --------------------------------------------------------------
POWER_PREFLIGHT = "results/preflight/power.txt"
POWER_SAMPLES = "results/power/samples/{method}.parquet"
PILOT_BENCHMARK_FILE = "results/pilot/benchmarks/{benchmark}.parquet"
PILOT_REPORT = "results/pilot/report.md"
PILOT_REPORT_HTML = "results/pilot/report.html"  # the same report, in `snakemake --report`
PILOT_FAILED = "results/pilot/failed.json"  # the stages of a pilot that failed
PILOT_SPEED = "results/pilot/speed.json"  # the update's and the rollout's speed by model size (rule pilot_speed)
PILOT_ESTIMATE = "results/pilot/estimate.json"  # the MFUs the pilot measured: the GPU-hours estimate uses them
BENCHMARK_OUTPUT = "results/benchmarks/{name}"  # what a benchmark of benchmarks/ draws (power_exactness)

# ---- logs and code stamps --------------------------------------------------------------------------
LOGS = "results/logs"
MODEL_LOG = "results/logs/download_model/{model}.log"
RUN_PREFLIGHT_LOG = "results/logs/preflight/{run}.log"
TRAIN_LOG = "results/logs/train/{run}.log"
EVAL_PREFLIGHT_LOG = "results/logs/preflight/eval/{run}.log"
EVAL_LOG = "results/logs/evaluate/{run}.log"
POWER_LOG = "results/logs/power/{method}.log"
PILOT_SPEED_LOG = "results/logs/pilot_speed.log"
CODE_DIR = "results/code"
CODE_STAMP = "results/code/{key}.json"  # each rule's code stamp (core.modules.stamp)
SLURM_JOB_ENV = ".snakemake/slurm_job_environment"  # the SLURM jobs' environment, less the hub token
TEMPLATE_CACHE = ".snakemake/behaviour-templates"  # the code stamps' parsed modules (core.modules.CACHE_DIR)


def rooted(template: str, root: str, **fields) -> str:
    """``template`` filled in, under ``root`` instead of ``results/`` (a command's placeholder, or a test's folder)."""
    assert template.startswith(RESULTS + "/"), template
    return root + template[len(RESULTS) :].format(**fields)


def log(rule: str, job: str | None = None) -> str:
    """A rule's log: one per job (``job``: its wildcards, as a template such as ``"{run}"``), or the rule's one."""
    return f"{LOGS}/{rule}/{job}.log" if job else f"{LOGS}/{rule}.log"
