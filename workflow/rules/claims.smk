# The claims this study judges and the jobs they need (entropy_rl.core.claim_plan), with the GPU-hours of each job
# at paper scale. Included after common.smk: the rules build what is chosen here (BUILT_ARTIFACTS, STUDY_RUNS, ...).
import json
import os
import sys

from snakemake.exceptions import WorkflowError

from entropy_rl.core import claim_plan
from entropy_rl.core.config import read_yaml
from entropy_rl.core import ledger as claims_ledger
from entropy_rl.paper.cost import budget
from entropy_rl.study import artifacts

# All of them, unless the command line names some (`--config 'claims=[law/*]'`) or a budget
# (`--config budget_gpu_hours=5000`): then only their runs, evaluations, samples and artifacts are built,
# and the audit lists every other claim as not run, with the GPU-hours it would add.
CLAIMS = claims_ledger.expand_ledger(read_yaml(LEDGER))


# The power-sampling study's artifacts and the methods each draws.
POWER_DRAWN = {name: POWER_STUDY.drawn(artifacts.ARTIFACTS[name].methods) for name in artifacts.POWER} if POWER else {}
CLAIM_JOBS = claim_plan.study_jobs(S, CLAIMS, artifacts.reads_tests, POWER_STUDY, POWER_DRAWN)
SELECTING = bool(config.get("claims")) or config.get("budget_gpu_hours") is not None
if MINI and config.get("budget_gpu_hours") is not None:
    raise WorkflowError("budget_gpu_hours is a paper-scale setting (the mini scale runs on CPUs); choose claims with claims=[...]")
# The GPU-hours: FLOPs at the MFUs of config.yaml paper.budget, or at those the pilot measured on this cluster.
BUDGET = S.get("budget")
if not MINI and os.path.exists(PILOT_ESTIMATE):
    try:
        with open(PILOT_ESTIMATE) as _fh:
            _measured = json.load(_fh)
        BUDGET = {**S["budget"], "rollout_mfu": _measured["rollout_mfu"], "train_mfu": _measured["train_mfu"]}
        if _measured.get("speed_laws"):  # the MFU by model size (paper.cost.speed_law), where the pilot measured sizes
            BUDGET["speed_laws"] = _measured["speed_laws"]
    except (ValueError, KeyError) as _err:  # not a report the pilot wrote: say so, estimate from config.yaml
        print(f"{PILOT_ESTIMATE} unreadable ({_err!r}); the GPU-hours estimate uses config.yaml's MFUs", file=sys.stderr)
if not MINI:
    JOB_HOURS = budget.job_hours(S, POWER_STUDY, BUDGET)
    if PILOT:
        JOB_HOURS.update(budget.pilot_hours(S, BUDGET))
        if "speed" in PILOT:
            JOB_HOURS["speed:pilot"] = budget.pilot_speed_hours(S, BUDGET)
        for _m, _job in PILOT_METHODS.items():
            JOB_HOURS[f"power:{_m}"] = budget.pilot_power_hours(_job, BUDGET, PILOT["startup_minutes"], len(POWER["benchmarks"]))
else:  # no GPU-hours at mini scale: a budget is a paper-scale setting (config.schema.yaml)
    JOB_HOURS = {job: 0.0 for jobs in CLAIM_JOBS.values() for job in jobs}


def budget_source():
    """Where the GPU-hours' MFUs come from, in words."""
    if MINI:
        return "no GPU-hours at mini scale"
    if BUDGET.get("speed_laws"):
        return f"FLOPs at the MFU of each model size by the GPU pilot's speed laws ({PILOT_ESTIMATE})"
    if BUDGET is not S["budget"]:
        return f"FLOPs at the MFUs the GPU pilot measured at its one model size ({PILOT_ESTIMATE})"
    return "FLOPs at the MFUs of config.yaml paper.budget, assumed"


SELECTION = claim_plan.select(CLAIM_JOBS, JOB_HOURS, config.get("claims"), config.get("budget_gpu_hours"))
NOT_RUN = claim_plan.not_run(CLAIM_JOBS, SELECTION, JOB_HOURS)
# What the study builds: every artifact and run, or those of the claims chosen.
BUILT_ARTIFACTS = sorted({c["measure"]["artifact"] for c in CLAIMS if c["id"] in SELECTION.claims}) if SELECTING else BUILDABLE_ARTIFACTS
STUDY_RUNS = claim_plan.runs_of(SELECTION.jobs) if SELECTING else RUNS
STUDY_POWER_METHODS = claim_plan.methods_of(SELECTION.jobs) if SELECTING else list(power_methods())
STUDY_MODELS = sorted({run_model(r) for r in STUDY_RUNS} | ({POWER["model"]} if STUDY_POWER_METHODS else set())) if SELECTING else MODELS


def evaluated_runs():
    """The runs evaluated on the test benchmarks, with their replicates: those of an artifact that shows test
    accuracy (Table 2) or that a claim of the ledger measures on it (study.artifacts.evaluated), of the claims judged.
    The other runs' figures and claims read their validation curves; `snakemake evaluations` evaluates every run."""
    if SELECTING:
        return claim_plan.evaluations_of(SELECTION.jobs)
    runs = {run for name in artifacts.evaluated(CLAIMS) if name in S["artifacts"] for run in artifact_runs(name)}
    return with_replicates(sorted(runs))


EVALUATED_RUNS = evaluated_runs()
