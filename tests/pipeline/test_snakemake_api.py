"""The adapter (pipeline.snakemake_api.Workflow) reads what the pipeline needs from Snakemake's workflow object."""

from types import SimpleNamespace

from entropy_rl.pipeline import snakemake_api as api
from fakes import Job


class SnakemakeReason(SimpleNamespace):
    def __str__(self):
        return "reasons: forced"


def workflow():
    reason = SnakemakeReason(
        forced=True, updated_input={"a"}, missing_output=set(), input_changed=False, software_stack_changed=True
    )
    dag = SimpleNamespace(
        needrun_jobs=lambda: ["j"],
        reason=lambda job: reason,
        needrun=lambda job: job == "j",
        dependencies={"j": {"d": {"f"}}},
    )
    persistence = SimpleNamespace(
        input_checksums=lambda job, f: ["sha256:x"], params=lambda out: ["1"], _serialize_param=repr
    )
    return SimpleNamespace(
        dag=dag,
        persistence=persistence,
        dag_settings=SimpleNamespace(targets=set()),
        touch=False,
        is_main_process=True,
        local_exec=False,
        basedir="/repo",
        _build_dag=lambda: built.append("dag"),
        get_rule=lambda name: rules.setdefault(name, SimpleNamespace(restart_times=0)),
    )


built, rules = [], {}


def test_the_plan_reads_the_dag_the_persistence_and_the_command_line():
    plan = api.Workflow(workflow())
    assert plan.targets() is None and not plan.touch and plan.is_main_process and not plan.local_exec
    reason = plan.reason("j")  # the project's own type, not Snakemake's
    assert reason == api.Reason(True, frozenset({"a"}), frozenset(), False, True, "reasons: forced")
    assert str(reason) == "reasons: forced"
    assert plan.needrun_jobs() == ["j"] and plan.needrun("j") and not plan.needrun("d")
    assert plan.dependencies("j") == {"d": {"f"}}
    assert plan.input_checksums("j", "f") == {"sha256:x"} and plan.recorded_params("out") == ["1"]
    assert plan.serialize_param({"a": 1}) == "{'a': 1}" and plan.basedir == "/repo"


def test_a_callback_once_the_dag_is_built_and_a_rules_restarts():
    """after_dag: the callback after the DAG is built, once however often Snakemake builds it (a dry run included)."""
    wf, called = workflow(), []
    adapter = api.Workflow(wf)
    adapter.after_dag(lambda: called.append(list(built)))
    built.clear()
    wf._build_dag()
    wf._build_dag()
    assert called == [["dag"]] and built == ["dag", "dag"]
    adapter.allow_restarts("train_verl", 5)
    assert rules["train_verl"].restart_times == 5


def test_a_jobs_parts():
    job = Job("train_verl", params={"spec": 1}, script="../scripts/train.py", basedir="/repo/rules", run="r")
    assert api.rule_name(job) == "train_verl" and api.job_wildcard(job, "run", "method") == "r"
    assert api.job_wildcard(Job("x", method="m"), "run", "method") == "m" and api.job_wildcard(Job("x"), "run") is None
    assert api.job_script(job) == "/repo/rules/../scripts/train.py" and api.job_script(Job("x")) is None
    assert api.job_params(job) == ({"spec": 1}, [1])
    job = Job("x", output=["o"], input=["i"], container="c.sif")
    assert (api.job_input(job), api.job_output(job), api.job_container(job)) == (["i"], ["o"], "c.sif")
