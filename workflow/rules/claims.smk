# The claims this study judges and the jobs they need (entropy_rl.pipeline.claim_plan, pipeline.claims), with the
# GPU-hours of each job at paper scale. Included after common.smk: the rules build what is chosen here
# (BUILT_ARTIFACTS, STUDY_RUNS, ...).
from entropy_rl.core.config import read_yaml
from entropy_rl.core import ledger as claims_ledger
from entropy_rl.pipeline import claim_plan
from entropy_rl.pipeline import claims as claim_choice
from entropy_rl.study import artifacts

# All of them, unless the command line names some (`--config 'claims=[law/*]'`) or a budget
# (`--config budget_gpu_hours=5000`): then only their runs, evaluations, samples and artifacts are built,
# and the audit lists every other claim as not run, with the GPU-hours it would add.
CLAIMS = claims_ledger.expand_ledger(read_yaml(LEDGER))


# The power-sampling study's artifacts and the methods each draws.
POWER_DRAWN = {name: POWER_STUDY.drawn(artifacts.ARTIFACTS[name].methods) for name in artifacts.POWER} if POWER else {}
CLAIM_JOBS = claim_plan.study_jobs(S, CLAIMS, artifacts.reads_tests, POWER_STUDY, POWER_DRAWN)
SELECTING = claim_choice.selecting(config)
claim_choice.check_budget_setting(MINI, config)
# The GPU-hours: FLOPs at the MFUs of config.yaml paper.budget, or at those the pilot measured on this cluster.
BUDGET = claim_choice.budget_assumptions(S, MINI, PILOT_ESTIMATE)
JOB_HOURS = claim_choice.job_hours(SCOPE, POWER_STUDY, PILOT_METHODS, BUDGET, CLAIM_JOBS)


def budget_source():
    return claim_choice.budget_source(S, MINI, BUDGET, PILOT_ESTIMATE)


def job_spread():
    """Every job's GPU-hours with its range and terms (paper.cost.ranges), computed when called: by claims_budget and
    the estimate printed before submission, not at every plan."""
    return claim_choice.job_spread(SCOPE, POWER_STUDY, BUDGET)


SELECTION = claim_plan.select(CLAIM_JOBS, JOB_HOURS, config.get("claims"), config.get("budget_gpu_hours"))
NOT_RUN = claim_plan.not_run(CLAIM_JOBS, SELECTION, JOB_HOURS)
# What the study builds: every artifact and run, or those of the claims chosen.
BUILT_ARTIFACTS = claim_choice.built_artifacts(CLAIMS, SELECTION, SELECTING, BUILDABLE_ARTIFACTS)
STUDY_RUNS = claim_choice.study_runs(SELECTION, SELECTING, RUNS)
STUDY_POWER_METHODS = claim_choice.study_power_methods(SELECTION, SELECTING, power_methods())
STUDY_MODELS = claim_choice.study_models(SCOPE, SELECTING, STUDY_RUNS, STUDY_POWER_METHODS)
EVALUATED_RUNS = claim_choice.evaluated_runs(S, CLAIMS, SELECTION, SELECTING)
