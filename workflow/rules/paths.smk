# The files the rules and their functions name: one template each (expand() or .format()), and no rule spells one
# of these paths again (tests/workflow/test_rule_files.py). Included first, before common.smk.
import os

BENCHMARK_FILE = "results/data/benchmarks/{benchmark}.parquet"
VALIDATION_SET = "results/data/benchmarks/validation.parquet"
TRAIN_DATA = "results/data/train.parquet"  # the training set of runs that name none (mini)
TRAIN_SET = "results/data/train/{train_set}.parquet"
PRETRAIN_CORPUS = "results/data/pretrain.parquet"
INSTRUCT_CORPUS = "results/data/instruct.parquet"  # instruction tuning of the mini instruct models
SOURCE_DIR = "results/data/sources/{source}"
SOURCE_CHECKED = "results/preflight/sources/{source}.txt"
MODEL_DIR = "results/models/{model}"
TOKENIZER_DIR = "results/models/tokenizer"
RUN_PREFLIGHT = "results/preflight/{run}.txt"  # a run's training (rule preflight)
EVAL_PREFLIGHT = "results/preflight/eval/{run}.txt"  # its evaluation's engine (rule preflight_eval)
RUN_METRICS = "results/runs/{run}/metrics.parquet"
RUN_FINAL = "results/runs/{run}/final"
EVAL_SUMMARY = "results/eval/{run}/summary.parquet"
EVAL_SAMPLES = "results/eval/{run}/{benchmark}.parquet"
RUN_FIT = "results/analysis/fits/{run}.json"
FIT_TABLE = "results/analysis/fits.csv"
FIT_LAW = "results/fit_law/{name}"  # `snakemake fit_law --config fit_law_log=PATH`: <name>.json, .png, .pdf
FIT_LAW_LOG = "results/logs/fit_law/{name}.log"
AUDIT_MD = "results/audit/audit.md"
AUDIT_HTML = "results/audit/audit.html"  # the same table, in `snakemake --report`
AUDIT_CSV = "results/audit/audit.csv"
TABLE_PAGE = "results/tables/{name}.html"  # a table's page in `snakemake --report` (figures.smk)
ARTIFACT_LOG = "results/logs/artifacts/{name}.log"  # each figure's and table's (figures.smk)
LEDGER = os.path.join(workflow.basedir, "claims.yaml")  # the claims the audit judges
POWER_PREFLIGHT = "results/preflight/power.txt"
POWER_SAMPLES = "results/power/samples/{method}.parquet"
PILOT_BENCHMARK_FILE = "results/pilot/benchmarks/{benchmark}.parquet"
PILOT_REPORT = "results/pilot/report.md"
PILOT_REPORT_HTML = "results/pilot/report.html"  # the same report, in `snakemake --report`
PILOT_FAILED = "results/pilot/failed.json"  # the stages of a pilot that failed (cluster.smk)
PILOT_SPEED = "results/pilot/speed.json"  # the update's and the rollout's speed by model size (rule pilot_speed)
PILOT_ESTIMATE = "results/pilot/estimate.json"  # the MFUs the pilot measured: the GPU-hours estimate uses them
# The GPU jobs' logs and checkpoints: the rules' and the pilot report's (pipeline.pilot.stages), one spelling each.
MODEL_LOG = "results/logs/download_model/{model}.log"
RUN_PREFLIGHT_LOG = "results/logs/preflight/{run}.log"
TRAIN_LOG = "results/logs/train/{run}.log"
RUN_CHECKPOINTS = "results/runs/{run}/checkpoints"  # verl's, where the launch puts them (paper.launch)
EVAL_PREFLIGHT_LOG = "results/logs/preflight/eval/{run}.log"
EVAL_LOG = "results/logs/evaluate/{run}.log"
POWER_LOG = "results/logs/power/{method}.log"
PILOT_SPEED_LOG = "results/logs/pilot_speed.log"
CODE_STAMP = "results/code/{key}.json"  # each rule's code stamp (common.smk code, entropy_rl.core.modules.stamp)
